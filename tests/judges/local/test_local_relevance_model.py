"""The relevance parameters and thresholds the judge ships: fitted, recorded with
their figures, and the ones the judge uses."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest

from ragas_trace.judges.local import LocalJudge, scoring
from ragas_trace.judges.local import judge as judge_module
from ragas_trace.judges.local.scoring import (
    RELEVANCE_FILE,
    AnswerFeatures,
    answer_value,
    parameters,
    relevance_thresholds,
)
from ragas_trace.results import Metric


def test_the_file_records_the_fit_and_its_holdout_beside_the_values_it_replaced() -> None:
    document = json.loads(RELEVANCE_FILE.read_text(encoding="utf-8"))
    answer, context = parameters()
    assert document["answer"] == asdict(answer) and document["context"] == asdict(context)
    assert answer.floor < answer.full and answer.part_floor < answer.part_full
    assert context.need_floor < context.need_full
    assert context.relative_floor > context.relative_full
    for metric in ("answer_relevance", "context_relevance"):
        assert 0.0 < relevance_thresholds()[metric] < 1.0
        figures = document["figures"][metric]
        assert figures["holdout_cases"] > 0 and figures["cases"] > figures["holdout_cases"]
        for which in ("fitted", "hand_set"):
            assert 0.5 < figures[which]["holdout_auroc"] <= 1.0
        # A fit lands only where the holdout does not drop.
        assert figures["fitted"]["holdout_auroc"] >= figures["hand_set"]["holdout_auroc"]


def test_the_judge_scores_answer_relevance_with_the_fitted_parameters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    judge = LocalJudge()
    seen: list[AnswerFeatures] = []
    original = judge_module.answer_relevance

    def recording(*args: object) -> tuple[float, str]:
        seen.append(scoring.answer_features(*args))  # type: ignore[arg-type]
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(judge_module, "answer_relevance", recording)
    result = judge.evaluate_sync("Who wrote the report?", [],
                                 "Dr. Amara Osei wrote the report for the ministry.",
                                 frozenset({Metric.ANSWER_RELEVANCE}))
    value = result.results[Metric.ANSWER_RELEVANCE].value
    assert value == pytest.approx(min(1.0, answer_value(seen[0], parameters()[0])))
    # Another parameter set gives another value: the file's are the ones in use.
    other = replace(parameters()[0], full=0.99)
    assert answer_value(seen[0], other) != pytest.approx(value)
