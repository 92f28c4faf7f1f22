"""``score()`` on contexts of the wrong type: a status with a reason, never a raise."""

import pytest

from ragas_trace import MetricStatus, score

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."


@pytest.mark.parametrize(("contexts", "kind"), [
    (None, "NoneType"), (5, "int"), ({"a": "Paris is in France."}, "a mapping"),
    (b"Paris is in France.", "bytes"), (["Paris is in France.", None], "NoneType passage"),
])
def test_wrong_contexts_are_a_status_with_a_reason(contexts, kind):
    scores = score(QUESTION, contexts, ANSWER)
    for metric in ("faithfulness", "context_relevance"):
        assert scores.status[metric] is MetricStatus.NO_CONTEXT
        reason = scores.reasons[metric]
        assert reason is not None and reason.startswith("invalid contexts:") and kind in reason
    assert scores.faithfulness is None and scores.context_relevance is None
    # Answer relevance reads no context: the record still gets that score.
    assert scores.status["answer_relevance"] is MetricStatus.SCORED


@pytest.mark.parametrize("contexts", [
    ("Paris is the capital and largest city of France.",),
    "Paris is the capital and largest city of France.",
    (p for p in ["Paris is the capital and largest city of France."]),
])
def test_good_contexts_are_scored(contexts):
    scores = score(QUESTION, contexts, ANSWER)
    assert scores.status["faithfulness"] is MetricStatus.SCORED
    assert scores.reasons["faithfulness"] is None
