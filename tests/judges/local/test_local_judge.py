import asyncio

from ragas_trace.judges.base import Judge
from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import MetricStatus

CONTEXT = ("The Eiffel Tower was completed in March 1889 as the entrance arch to the World's "
           "Fair in Paris. It was designed and built by the engineering company of Gustave "
           "Eiffel.")
QUESTION = "When was the Eiffel Tower completed and who designed it?"


def test_is_a_judge_with_a_stable_name(judge: LocalJudge) -> None:
    assert isinstance(judge, Judge)
    assert judge.name == "local:minilm-l6-int8"


def test_evaluate_scores_all_three_metrics_in_range(judge: LocalJudge) -> None:
    scores = asyncio.run(judge.evaluate(
        QUESTION, [CONTEXT], "The tower was completed in March 1889 by Gustave Eiffel's company."))
    for status in scores.status.values():
        assert status is MetricStatus.SCORED
    for value in (scores.faithfulness, scores.answer_relevance, scores.context_relevance):
        assert value is not None and 0.0 <= value <= 1.0
    assert scores.context_sentences == 2
    assert scores.statements and scores.statements[0].supported
