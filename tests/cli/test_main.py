import argparse
import json
from importlib import metadata
from pathlib import Path

import pytest

from ragas_trace.cli.main import build_parser, main, plain_text

ROOT = Path(__file__).resolve().parents[2]


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ragas-trace {metadata.version('ragas-trace')}"


@pytest.mark.parametrize("command", [["demo"], ["serve"], ["eval"], ["score"], ["alerts"],
                                     ["alerts", "simulate"]], ids=" ".join)
def test_help_is_plain_text(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    out = capsys.readouterr().out
    assert f"ragas-trace {' '.join(command)}" in out
    assert "``" not in out


def test_plain_text_drops_literal_markup_only() -> None:
    assert plain_text("rows of ``dev-cases.jsonl`` (a `split`)") == \
        "rows of dev-cases.jsonl (a `split`)"
    assert plain_text(None) is None


@pytest.mark.parametrize("command", ["demo", "serve", "eval", "score"])
def test_every_option_has_help(command: str) -> None:
    parser = build_parser([command])
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    undocumented = [a.option_strings for a in sub.choices[command]._actions if not a.help]
    assert undocumented == []


def test_eval_help_names_a_dev_cases_file_that_exists(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    path = "tests/judges/local/dev_cases.jsonl"
    assert path in out
    rows = [json.loads(line) for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
            if line.strip()]
    hard = sum(1 for r in rows if r.get("split") == "hard")
    assert f"{len(rows)} rows: {len(rows) - hard} ordinary, {hard} in the \"hard\" split" in out
