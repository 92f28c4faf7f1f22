"""The local judge takes any text in the question, the passages and the answer, alone
or together: every metric ends ``scored`` in [0, 1] or with a status and a plain
reason, never ``failed`` by an internal error (issue 30)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from any_text import (
    REGRESSION_CASES,
    REGRESSIONS,
    SENTENCES,
    any_text,
    assert_plain_scores,
    passages,
    scaled,
)
from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import ALL_METRICS, Metric, MetricStatus

pytestmark = pytest.mark.usefixtures("no_internal_errors")

QUESTION = "How large is the lake, and when was it formed?"
PASSAGE = "The lake covers 25 km² and formed about 12,000 years ago. It is 40 m deep."
ANSWER = "The lake covers 25 km² and formed about 12,000 years ago."
_ISSUE_STRINGS = [case["text"] for case in REGRESSION_CASES
                  if "all three metrics" in case["broke"]]


def test_the_issue_strings_are_in_the_corpus() -> None:
    assert _ISSUE_STRINGS == ["The lake covers 25 km².", "see ① and ②", "The \udc80 lake"]


@pytest.mark.parametrize("text", _ISSUE_STRINGS)
def test_a_string_that_failed_every_metric_now_scores_all_three(
        judge: LocalJudge, text: str) -> None:
    scores = judge.evaluate_sync("What does the text say about the lake?", [text, PASSAGE],
                                 text + " " + ANSWER)
    assert {m: scores.result(m).status for m in Metric} == dict.fromkeys(
        Metric, MetricStatus.SCORED)
    assert_plain_scores(scores, ALL_METRICS)


@pytest.mark.parametrize("text", REGRESSIONS, ids=range(len(REGRESSIONS)))
def test_every_string_that_broke_something_ends_plain(judge: LocalJudge, text: str) -> None:
    for question, contexts, answer in ((text, [PASSAGE], ANSWER), (QUESTION, [text], ANSWER),
                                       (QUESTION, [PASSAGE], text), (text, [text], text)):
        assert_plain_scores(judge.evaluate_sync(question, contexts, answer), ALL_METRICS)


@scaled(30)
@given(question=any_text(), contexts=passages(), answer=any_text())
@example(question="\x00", contexts=["\udc80" * 3, ""], answer="①②③")
@example(question="", contexts=[], answer="")
def test_any_record_ends_scored_or_with_a_plain_reason(
        judge: LocalJudge, question: str, contexts: list[str], answer: str) -> None:
    assert_plain_scores(judge.evaluate_sync(question, contexts, answer), ALL_METRICS)


@pytest.mark.parametrize("metric", list(Metric))
@scaled(10)
@given(question=any_text(), contexts=passages(), answer=any_text())
def test_each_metric_alone_takes_any_text(judge: LocalJudge, metric: Metric, question: str,
                                          contexts: list[str], answer: str) -> None:
    scores = judge.evaluate_sync(question, contexts, answer, frozenset({metric}))
    assert set(scores.results) == {metric}
    assert_plain_scores(scores, frozenset({metric}))


@pytest.mark.parametrize("field", ["question", "contexts", "answer"])
@scaled(12)
@given(text=any_text(), ordinary=st.sampled_from(SENTENCES))
def test_any_text_in_one_field_of_an_ordinary_record(
        judge: LocalJudge, field: str, text: str, ordinary: str) -> None:
    record = {"question": QUESTION, "contexts": [PASSAGE, ordinary], "answer": ANSWER}
    record[field] = [text, ordinary] if field == "contexts" else text
    assert_plain_scores(judge.evaluate_sync(**record), ALL_METRICS)  # type: ignore[arg-type]
