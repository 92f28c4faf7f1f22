"""``ragas-trace score`` with the OpenAI judge against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragas_trace.cli.main import main
from ragas_trace.judges.prompts import Task
from ragas_trace.record import Context, RagRecord
from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault


def _records(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "records.jsonl"
    rows = [RagRecord(f"What is fact number {i}?", (Context(f"Fact number {i} is {i * 7}.",
                                                            id=f"doc{i}"),),
                      f"Fact number {i} is {i * 7}.", trace_id=i + 1, span_id=i + 1).to_dict()
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_score_writes_records_with_scores_in_order(server: FakeOpenAIServer, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scored.jsonl"
    assert main(["score", "--input", str(_records(tmp_path, 9)), "--output", str(out),
                 "--judge", "openai", "--concurrency", "3"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["question"] for r in rows] == [f"What is fact number {i}?" for i in range(9)]
    assert all(r["ragas"]["scores"]["faithfulness"] == 1.0 for r in rows)
    assert rows[0]["contexts"] == [{"content": "Fact number 0 is 0.", "id": "doc0"}]
    assert rows[0]["ragas"]["usage"]["chat_calls"] == 3
    assert RagRecord.from_dict(rows[3]).trace_id == 4
    assert "score: lines 9/9 (0 with a failed metric)" in capsys.readouterr().err


def test_score_skips_bad_lines_and_reports_failures(server: FakeOpenAIServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _records(tmp_path, 2)
    path.write_text(path.read_text(encoding="utf-8") + '{"question": 5}\n', encoding="utf-8")
    server.inject(Fault.TRUNCATED, times=None, task=Task.CONTEXT)
    code = main(["score", "--input", str(path), "--output", "-", "--judge", "openai",
                 "--metrics", "context_relevance"])
    captured = capsys.readouterr()
    assert code == 1
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert len(rows) == 2
    assert rows[0]["ragas"]["status"] == {"faithfulness": "skipped",
                                          "answer_relevance": "skipped",
                                          "context_relevance": "failed"}
    assert "truncated" in rows[0]["ragas"]["reasons"]["context_relevance"]
    assert "records.jsonl:3" in captured.err
    assert "score: lines 3/3 (1 skipped, 2 with a failed metric)" in captured.err
    assert server.stats().embedding_requests == 0


def test_a_skipped_line_is_counted_as_skipped_not_failed(
        server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _records(tmp_path, 2)
    path.write_text(path.read_text(encoding="utf-8") + "not json\n", encoding="utf-8")
    assert main(["score", "--input", str(path), "--output", "-", "--judge", "openai"]) == 1
    err = capsys.readouterr().err
    assert "score: lines 3/3 (1 skipped, 0 with a failed metric)" in err
    assert "ragas-trace score: skipped" in err and "1 line(s) skipped" in err
    assert "failed)" not in err


def test_score_rejects_unknown_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["score", "--input", str(_records(tmp_path, 1)), "--output", "-",
                 "--metrics", "fluency"]) == 2
    assert "fluency" in capsys.readouterr().err
