"""``ragas-trace score`` as a careless user runs it (issue 17, rows 4 and 5): the
output named as the input, malformed and incomplete lines, an empty input, a run
that fails half way. The judge is the loopback OpenAI server."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragas_trace.cli import score_cmd
from ragas_trace.cli.main import main
from ragas_trace.record import Context, RagRecord
from ragas_trace.testing.openai_server import FakeOpenAIServer


def _line(i: int) -> str:
    record = RagRecord(f"What is fact number {i}?", (Context(f"Fact number {i} is {i * 7}."),),
                       f"Fact number {i} is {i * 7}.")
    return json.dumps(record.to_dict()) + "\n"


def _records(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(_line(i) for i in range(n)), encoding="utf-8")
    return path


def _score(*args: str) -> int:
    return main(["score", *args, "--judge", "openai", "--metrics", "faithfulness"])


# --- row 4: the output is never the input, and is written atomically ----------------

@pytest.mark.parametrize("how", ["same path", "relative path", "symlink", "hard link"])
def test_an_output_that_is_the_input_is_refused_and_the_input_kept(
        server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], how: str) -> None:
    path = _records(tmp_path)
    before = path.read_bytes()
    output = path
    if how == "relative path":
        (tmp_path / "sub").mkdir()
        monkeypatch.chdir(tmp_path / "sub")
        output = Path("..") / "sub" / ".." / path.name
    elif how == "symlink":
        output = tmp_path / "link.jsonl"
        output.symlink_to(path)
    elif how == "hard link":
        output = tmp_path / "hard.jsonl"
        os.link(path, output)
    assert _score("--input", str(path), "--output", str(output)) == 2
    assert "is the input file" in capsys.readouterr().err
    assert path.read_bytes() == before
    assert server.stats().chat_requests == 0


def test_a_run_that_fails_half_way_leaves_the_previous_output(
        server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = tmp_path / "scored.jsonl"
    output.write_text("previous results\n", encoding="utf-8")

    async def fails_half_way(path: Path, out: Any, *args: Any) -> int:
        out.write('{"partial": true}\n')
        raise OSError("disk full")

    monkeypatch.setattr(score_cmd, "score_file", fails_half_way)
    assert _score("--input", str(_records(tmp_path)), "--output", str(output)) == 2
    assert output.read_text(encoding="utf-8") == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.jsonl", "scored.jsonl"]


def test_the_output_replaces_the_old_one_keeping_its_mode_and_symlink(
        server: FakeOpenAIServer, tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("old\n", encoding="utf-8")
    real.chmod(0o640)
    link = tmp_path / "scored.jsonl"
    link.symlink_to(real)
    assert _score("--input", str(_records(tmp_path)), "--output", str(link)) == 0
    assert link.is_symlink()
    assert len(real.read_text(encoding="utf-8").splitlines()) == 3
    assert real.stat().st_mode & 0o777 == 0o640


def test_atomic_output_removes_its_temporary_file_on_error(tmp_path: Path) -> None:
    from ragas_trace.cli.safe_output import atomic_output

    target = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError), atomic_output(target) as out:
        out.write("half")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


# --- row 5: bad lines are reported and skipped, the run goes on -----------------------

def test_malformed_and_incomplete_lines_are_reported_and_skipped(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(_line(0) + '{"question": "broken\n' + _line(1)
                    + json.dumps({"contexts": ["c"]}) + "\n"
                    + json.dumps({"question": "q only", "contexts": ["c"]}) + "\n"
                    + _line(2), encoding="utf-8")
    output = tmp_path / "scored.jsonl"
    assert _score("--input", str(path), "--output", str(output)) == 1
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert [r["question"] for r in rows] == [f"What is fact number {i}?" for i in range(3)]
    err = capsys.readouterr().err
    assert f"{path}:2: not JSON" in err
    assert f"{path}:4: missing 'question'; missing 'answer'" in err
    assert f"{path}:5: missing 'answer'" in err
    assert "3 line(s) skipped" in err


@pytest.mark.parametrize("content", ["", "\n  \n"], ids=["empty", "blank lines"])
def test_an_empty_input_is_reported_and_exits_1(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        content: str) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(content, encoding="utf-8")
    output = tmp_path / "scored.jsonl"
    assert _score("--input", str(path), "--output", str(output)) == 1
    assert "no records in" in capsys.readouterr().err
    assert not output.exists()
