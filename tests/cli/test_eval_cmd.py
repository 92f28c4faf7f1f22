"""``ragas-trace eval`` with the OpenAI judge against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragas_trace.cli.eval_cmd import preference_point
from ragas_trace.cli.main import main
from ragas_trace.judges.prompts import Task
from ragas_trace.testing.fake_judge import default_reply
from ragas_trace.testing.openai_server import FakeOpenAIServer

ROW = {
    "question": "When was the Eiffel Tower completed?",
    "context": "The Eiffel Tower was completed in March 1889. It stands in Paris.",
    "context_padded": "The Eiffel Tower was completed in March 1889. It stands in Paris. "
                      "Bananas are yellow. Rome has many churches.",
    "answer": "The Eiffel Tower was completed in March 1889.",
    "ungrounded_answer": "Napoleon opened it in 1850 using gold.",
    "poor_answer": "I don't know.",
}


def _dataset(tmp_path: Path, rows: list[dict[str, str]]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_preference_point() -> None:
    assert preference_point(0.9, 0.1) == 1.0
    assert preference_point(0.5, 0.5) == 0.5
    assert preference_point(0.1, 0.9) == 0.0
    assert preference_point(None, 0.0) == 0.0
    assert preference_point(1.0, None) == 0.0


def test_eval_json_shape_and_splits(server: FakeOpenAIServer, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = _dataset(tmp_path, [ROW, {**ROW, "split": "hard"}, {**ROW, "id": "x"}])
    assert main(["eval", "--dataset", str(path), "--judge", "openai", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge"] == "openai:gpt-4o-mini"
    assert set(report["splits"]) == {"all", "hard"}
    pair = {"agreement": 1.0, "pairs": 2}
    assert report["splits"]["all"] == {"faithfulness": pair, "answer_relevance": pair,
                                       "context_relevance": pair}
    assert report["splits"]["hard"]["faithfulness"] == {"agreement": 1.0, "pairs": 1}


def test_eval_failed_scores_count_zero(server: FakeOpenAIServer, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    # The verdicts part of the grounding reply is unreadable; its selection part stands.
    server.set_reply(Task.GROUNDING, lambda r: {**default_reply(r), "verdicts": "garbage"})
    path = _dataset(tmp_path, [ROW])
    assert main(["eval", "--dataset", str(path), "--judge", "openai", "--json"]) == 0
    splits = json.loads(capsys.readouterr().out)["splits"]["all"]
    assert splits["faithfulness"] == {"agreement": 0.0, "pairs": 1}
    assert splits["context_relevance"]["agreement"] == 1.0


def test_eval_ties_count_half(server: FakeOpenAIServer, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _dataset(tmp_path, [{**ROW, "ungrounded_answer": ROW["answer"]}])
    assert main(["eval", "--dataset", str(path), "--judge", "openai", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["splits"]["all"]["faithfulness"][
        "agreement"] == 0.5


def test_eval_text_table(server: FakeOpenAIServer, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--dataset", str(_dataset(tmp_path, [ROW])), "--judge", "openai"]) == 0
    out = capsys.readouterr().out
    assert "faithfulness" in out and "1.000 (1)" in out


def test_eval_bad_rows_are_clear_errors(server: FakeOpenAIServer, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    missing = {k: v for k, v in ROW.items() if k != "poor_answer"}
    assert main(["eval", "--dataset", str(_dataset(tmp_path, [ROW, missing])),
                 "--judge", "openai"]) == 2
    assert "cases.jsonl:2" in capsys.readouterr().err and server.stats().requests == 0
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    assert main(["eval", "--dataset", str(broken), "--judge", "openai"]) == 2
    assert main(["eval", "--dataset", str(tmp_path / "nope.jsonl"), "--judge", "openai"]) == 2
    assert main(["eval", "--dataset", str(broken), "--judge", "gpt"]) == 2
