"""``ragas-trace score`` and ``eval`` on bad input files: each case gets its
documented exit code and a message in the command line's terms (flag, environment
variable, file and line), never a Python errno or keyword; every good line is
scored (issue 30)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragas_trace.cli.main import main
from ragas_trace.results import ALL_METRICS, Metric, MetricResult, MetricStatus, Scores
from ragas_trace.testing.openai_server import FakeOpenAIServer
from ragas_trace.testing.scripted_judge import ScriptedJudge

GOOD = {"question": "How deep is the lake?", "contexts": ["The lake is 40 m deep."],
        "answer": "It is 40 m deep."}
EXIT_OK, EXIT_SKIPPED_LINES, EXIT_USAGE = 0, 1, 2


def _line(question: str = GOOD["question"]) -> bytes:
    return json.dumps({**GOOD, "question": question}).encode() + b"\n"


def _score(path: Path, out: Path | str, *extra: str) -> int:
    return main(["score", "--input", str(path), "--output", str(out), *extra])


def _plain(err: str) -> None:
    """A message for a command line user: no errno, no Python keyword argument."""
    assert "Errno" not in err and "=" not in err.replace("==", ""), err
    assert "Traceback" not in err, err



def test_a_line_that_is_not_utf8_is_reported_with_file_and_line_and_the_rest_scored(
        judge: ScriptedJudge, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out = tmp_path / "f.jsonl", tmp_path / "out.jsonl"
    path.write_bytes(_line("first?") + b"\xe9\n" + _line("third?"))
    assert _score(path, out) == EXIT_SKIPPED_LINES
    err = capsys.readouterr().err
    assert f"{path}:2: not UTF-8 text (byte 0xe9 at column 1)" in err
    assert "1 line(s) skipped" in err
    _plain(err)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["question"] for r in rows] == ["first?", "third?"]
    assert judge.calls == 2


def test_a_byte_order_mark_at_the_start_is_read(
        judge: ScriptedJudge, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out = tmp_path / "bom.jsonl", tmp_path / "out.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _line("first?") + _line("second?"))
    assert _score(path, out) == EXIT_OK
    assert [json.loads(line)["question"] for line in out.read_text("utf-8").splitlines()] \
        == ["first?", "second?"]
    assert "skipped" not in capsys.readouterr().err


@pytest.mark.parametrize(("name", "message"), [
    ("missing.jsonl", "no such file"),
    ("a-directory", "is a directory, not a file"),
    ("no-such-dir/f.jsonl", "no such directory"),
])
def test_an_input_that_cannot_be_read_is_named_with_its_flag(
        judge: ScriptedJudge, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        name: str, message: str) -> None:
    (tmp_path / "a-directory").mkdir()
    path, out = tmp_path / name, tmp_path / "out.jsonl"
    assert _score(path, out) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"ragas-trace score: --input {path}: {message}" in err
    _plain(err)
    assert not out.exists() and judge.calls == 0


def test_an_output_in_a_missing_directory_is_named_with_its_flag(
        judge: ScriptedJudge, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out = tmp_path / "f.jsonl", tmp_path / "nowhere" / "out.jsonl"
    path.write_bytes(_line())
    assert _score(path, out) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"--output {out}: no such directory {out.parent}" in err
    _plain(err)


def test_a_field_of_the_wrong_type_is_reported_as_such_not_as_missing(
        judge: ScriptedJudge, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(json.dumps({**GOOD, "question": 5}) + "\n"
                    + json.dumps({"question": "q?"}) + "\n"
                    + json.dumps({**GOOD, "answer": None}) + "\n", encoding="utf-8")
    assert _score(path, "-") == EXIT_SKIPPED_LINES
    err = capsys.readouterr().err
    assert f"{path}:1: 'question' is a number, not a string" in err
    assert f"{path}:2: missing 'answer'" in err
    assert f"{path}:3: 'answer' is null, not a string" in err
    assert "missing 'question'" not in err
    _plain(err)


def test_an_input_whose_every_line_is_bad_writes_no_output(
        judge: ScriptedJudge, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, out, kept = tmp_path / "f.jsonl", tmp_path / "out.jsonl", tmp_path / "kept.jsonl"
    path.write_bytes(b"\xe9\nnot json\n[1, 2]\n")
    assert _score(path, out) == EXIT_SKIPPED_LINES
    err = capsys.readouterr().err
    assert f"no line of {path} could be scored; nothing written ({out} not written)" in err
    assert f"{path}:3: expected a JSON object, got an array" in err
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]  # nor a temporary file left behind
    kept.write_text("an earlier run's output\n", encoding="utf-8")
    assert _score(path, kept) == EXIT_SKIPPED_LINES
    assert kept.read_text(encoding="utf-8") == "an earlier run's output\n"


def test_a_record_with_a_lone_surrogate_is_scored_and_written_escaped(
        judge: ScriptedJudge, tmp_path: Path) -> None:
    path, out = tmp_path / "f.jsonl", tmp_path / "out.jsonl"
    path.write_text(json.dumps({**GOOD, "answer": "The \udc80 lake"}) + "\n", encoding="utf-8")
    assert _score(path, out) == EXIT_OK
    assert json.loads(out.read_text(encoding="utf-8"))["answer"] == "The \udc80 lake"


@pytest.mark.parametrize("command", ["score", "eval"])
def test_judge_openai_without_a_key_names_the_variable_to_set(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        command: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    path = tmp_path / "f.jsonl"
    path.write_bytes(_line())
    flag = "--input" if command == "score" else "--dataset"
    argv = [command, flag, str(path), "--judge", "openai"]
    if command == "score":
        argv += ["--output", "-"]
    else:
        path.write_text(json.dumps(dict.fromkeys(
            ("question", "context", "context_padded", "answer", "ungrounded_answer",
             "poor_answer"), "text")) + "\n", encoding="utf-8")
    assert main(argv) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--judge openai needs an API key: set OPENAI_API_KEY" in err
    assert "api_key" not in err
    _plain(err)


class _SkipsLongAnswers:
    """A judge with a size limit: faithfulness ``skipped`` over a million characters of
    answer, as a judge that bounds its time per record does."""

    name = "skips-long"
    reason = "answer over the judge's limit of 1000000 characters"

    async def evaluate(self, question: str | None, contexts: Sequence[str],
                       answer: str | None, metrics: frozenset[Metric] = ALL_METRICS) -> Scores:
        results = {m: MetricResult.scored(0.5) for m in metrics}
        if Metric.FAITHFULNESS in metrics and len(answer or "") > 1_000_000:
            results[Metric.FAITHFULNESS] = MetricResult.unscored(MetricStatus.SKIPPED,
                                                                 self.reason)
        return Scores(self.name, results)

    async def aclose(self) -> None:
        return None


def test_a_skipped_metric_is_said_on_stderr(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("ragas_trace.judges.resolve_judge", lambda spec=None: _SkipsLongAnswers())
    path, out = tmp_path / "f.jsonl", tmp_path / "out.jsonl"
    path.write_bytes(_line() + json.dumps({**GOOD, "answer": "It is deep. " * 440_000}).encode()
                     + b"\n")
    assert path.stat().st_size > 5_000_000
    assert _score(path, out) == EXIT_OK  # every line scored; the doc says 0 covers this
    err = capsys.readouterr().err
    assert (f"ragas-trace score: faithfulness skipped in 1 of 2 records "
            f"({_SkipsLongAnswers.reason})") in err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["ragas"]["status"]["faithfulness"] for r in rows] == ["scored", "skipped"]


def test_the_exit_codes_are_documented_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0 every line scored (a metric may still be failed, timed out or skipped: " \
           "stderr counts them by metric and reason" in text
    assert "1 some lines were skipped" in text and "every line is bad (nothing is written)" \
        in text
    assert "2 bad arguments (no API key for --judge openai" in text


def test_eval_names_the_file_and_line_of_a_bad_byte(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf\n" + b"{\"question\": \"\xe9\"}\n")
    assert main(["eval", "--dataset", str(path), "--judge", "openai"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"ragas-trace eval: {path}:2: not UTF-8 text (byte 0xe9 at column 15)" in err
    _plain(err)


def test_eval_names_a_missing_dataset_with_its_flag(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "none.jsonl"
    assert main(["eval", "--dataset", str(path), "--judge", "openai"]) == EXIT_USAGE
    assert f"ragas-trace eval: --dataset {path}: no such file" in capsys.readouterr().err
