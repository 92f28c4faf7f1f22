"""bench/results_file.py records the command that is running (never one typed by the
script), and a merging run keeps the other figures with the command that made them."""

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _results_file() -> ModuleType:
    spec = importlib.util.spec_from_file_location("results_file",
                                                  ROOT / "bench" / "results_file.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


results_file = _results_file()


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(results_file, "RESULTS", tmp_path)
    return tmp_path


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", [str(ROOT / "bench" / "x.py"), *args])


def test_the_recorded_command_is_the_running_one(results: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _run(monkeypatch, "--rounds", "3", "--label", "two words")
    results_file.write_results("x", {"r": {"value": 1, "label": "r"}},
                               command="python bench/x.py --rounds 20")
    document = json.loads((results / "x.json").read_text(encoding="utf-8"))
    assert document["command"] == "python bench/x.py --rounds 3 --label 'two words'"
    assert "recording the running command" in capsys.readouterr().err


def test_a_merging_run_keeps_the_other_figures_with_their_own_command(
        results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(monkeypatch, "--shapes", "chain")
    results_file.write_results("x", {"chain.r": {"value": 1, "label": "chain"},
                                     "agent.r": {"value": 2, "label": "agent"}})
    _run(monkeypatch, "--shapes", "agent")
    results_file.write_results("x", {"agent.r": {"value": 3, "label": "agent"}}, merge=True)
    figures = json.loads((results / "x.json").read_text(encoding="utf-8"))["figures"]
    assert figures["agent.r"] == {"value": 3, "label": "agent"}
    assert figures["chain.r"]["command"] == "python bench/x.py --shapes chain"
    assert figures["chain.r"]["value"] == 1
    _run(monkeypatch, "--shapes", "agent")
    results_file.write_results("x", {"agent.r": {"value": 4, "label": "agent"}}, merge=True)
    figures = json.loads((results / "x.json").read_text(encoding="utf-8"))["figures"]
    assert figures["chain.r"]["command"] == "python bench/x.py --shapes chain"


def test_repeated_runs_give_their_median_and_every_run() -> None:
    assert results_file.repeated([0.91, 0.77, 1.3249], 2) == {
        "value": 0.91, "runs": [0.91, 0.77, 1.32]}
