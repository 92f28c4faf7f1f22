import math

import numpy as np
import pytest

from ragas_trace.metrics import (
    answer_relevance,
    context_relevance,
    cosine,
    faithfulness,
    match_sentences,
)
from ragas_trace.results import MetricStatus, StatementVerdict


def _verdicts(*supported: bool) -> list[StatementVerdict]:
    return [StatementVerdict(f"s{i}", s) for i, s in enumerate(supported)]


def test_faithfulness_is_the_supported_share() -> None:
    assert faithfulness(_verdicts(True, False, True, True)).value == 0.75
    assert faithfulness(_verdicts(False)).value == 0.0
    assert faithfulness(_verdicts(True)).value == 1.0


def test_faithfulness_without_statements_is_not_a_score() -> None:
    result = faithfulness([])
    assert result.status is MetricStatus.NO_STATEMENTS and result.value is None
    assert result.reason


def test_cosine() -> None:
    assert cosine([1, 0], [1, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 1]) == pytest.approx(0.0)
    assert cosine([1, 0], [-1, 0]) == pytest.approx(-1.0)
    assert cosine([0, 0], [1, 0]) == 0.0
    with pytest.raises(ValueError):
        cosine([1, 0], [1, 0, 0])


def test_answer_relevance_mean_clamps_negative_similarities() -> None:
    q = np.array([1.0, 0.0])
    result = answer_relevance(q, [[1.0, 0.0], [-1.0, 0.0], [1.0, 1.0]])
    assert result.status is MetricStatus.SCORED
    assert result.value == pytest.approx((1.0 + 0.0 + math.sqrt(0.5)) / 3)


def test_answer_relevance_noncommittal_and_empty() -> None:
    assert answer_relevance([1.0], [[1.0]], noncommittal=True).value == 0.0
    failed = answer_relevance([1.0], [])
    assert failed.status is MetricStatus.FAILED and failed.value is None


def test_answer_relevance_nan_embeddings_fail() -> None:
    result = answer_relevance([1.0, 0.0], [[float("nan"), 0.0]])
    assert result.status is MetricStatus.FAILED


CONTEXT = ['The tower is 330 m tall. It was built in 1889. "It is iron," they said.',
           "Paris is in France."]


def test_context_relevance_tolerates_whitespace_quotes_and_final_stop() -> None:
    result, match = context_relevance(CONTEXT, ["It  was built\nin 1889",
                                                "“It is iron,” they said."])
    assert result.value == pytest.approx(2 / 4)
    assert match.kept == ("It was built in 1889.", '"It is iron," they said.')
    assert match.unmatched == ()


def test_context_relevance_counts_only_real_sentences_once() -> None:
    result, match = context_relevance(CONTEXT, ["Paris is in France.", "Paris is in France.",
                                                "The tower is very old."])
    assert result.value == pytest.approx(1 / 4)
    assert match.unmatched == ("The tower is very old.",)


def test_context_relevance_splits_merged_sentences() -> None:
    match = match_sentences(CONTEXT, ["The tower is 330 m tall. It was built in 1889."])
    assert match.kept == ("The tower is 330 m tall.", "It was built in 1889.")


def test_context_relevance_invented_sentences_fail_instead_of_scoring() -> None:
    result, _ = context_relevance(CONTEXT, ["The tower is made of gold."])
    assert result.status is MetricStatus.FAILED and "none of the 1" in (result.reason or "")


def test_context_relevance_insufficient_and_empty() -> None:
    assert context_relevance(CONTEXT, ["Paris is in France."], insufficient=True)[0].value == 0.0
    assert context_relevance(CONTEXT, [])[0].value == 0.0
    assert context_relevance(["  "], ["x"])[0].status is MetricStatus.NO_CONTEXT


def test_context_relevance_chinese_and_german() -> None:
    zh = ["埃菲尔铁塔于1889年建成。它由古斯塔夫·埃菲尔设计。巴黎是法国首都。"]
    result, match = context_relevance(zh, ["埃菲尔铁塔于1889年建成"])
    assert result.value == pytest.approx(1 / 3) and match.kept == ("埃菲尔铁塔于1889年建成。",)
    de = ["Die Mauer fiel am 9. November 1989. Berlin ist groß."]
    result, match = context_relevance(de, ["Die Mauer fiel am 9. November 1989."])
    assert result.value == pytest.approx(1 / 2)


def test_context_relevance_accepts_a_copy_missing_a_few_words_at_an_end() -> None:
    context = ["However, the tower was finished in March 1889 [3]. Rome is old."]
    result, match = context_relevance(context, ["the tower was finished in March 1889"])
    assert result.value == pytest.approx(1 / 2)
    assert match.kept == ("However, the tower was finished in March 1889 [3].",)
    short, _ = context_relevance(context, ["March 1889"])  # a fragment is not a sentence
    assert short.status is MetricStatus.FAILED
