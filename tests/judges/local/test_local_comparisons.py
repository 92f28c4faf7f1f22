"""Comparisons turned round: the one same-words contradiction the local judge sees."""

from ragas_trace.judges.local import LocalJudge
from ragas_trace.judges.local.comparisons import Comparison, comparisons, reversed_comparisons

CONTEXT = ("Jupiter is the largest planet in the Solar System, larger than Saturn. "
           "As of 2023, Saturn has more known moons than Jupiter.")


def test_comparisons_in_the_context() -> None:
    assert comparisons(CONTEXT) == [Comparison("larger", "satur"),
                                    Comparison("more", "jupit")]
    assert comparisons("Der Rhein ist länger als die Donau.") == [Comparison("länger", "donau")]
    assert comparisons("It is more than a river.") == []  # "a" is no side of a comparison


def test_a_statement_that_turns_a_comparison_round() -> None:
    found = comparisons(CONTEXT)
    assert reversed_comparisons("Saturn is larger", found) == ["saturn"]
    assert reversed_comparisons("Jupiter has more known moons", found) == ["jupiter"]
    assert reversed_comparisons("Jupiter is larger", found) == []
    assert reversed_comparisons("Saturn has more known moons", found) == []
    assert reversed_comparisons("Saturn is larger than Mars", found) == []


def test_the_judge_scores_the_reversed_answer_down(judge: LocalJudge) -> None:
    question = "Which is larger, Jupiter or Saturn, and which has more known moons?"
    right = judge.evaluate_sync(question, [CONTEXT], "Jupiter is larger, but Saturn has more "
                                "known moons.")
    turned = judge.evaluate_sync(question, [CONTEXT], "Saturn is larger, but Jupiter has more "
                                 "known moons.")
    assert right.faithfulness is not None and turned.faithfulness is not None
    # Measured and named; the fitted model weighs it as the labelled data do (little).
    assert "other way round" in turned.statements[0].reason
    assert "other way round" not in right.statements[0].reason
