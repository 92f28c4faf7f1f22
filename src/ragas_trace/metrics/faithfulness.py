"""Faithfulness (paper, section 3): the share of the answer's statements that the
context supports."""

from __future__ import annotations

from collections.abc import Sequence

from ragas_trace.results import MetricResult, MetricStatus, StatementVerdict


def faithfulness(verdicts: Sequence[StatementVerdict]) -> MetricResult:
    """|supported| / |statements|; an answer without statements (a refusal, an empty
    answer) has nothing to verify and gets ``NO_STATEMENTS``, not a number."""
    if not verdicts:
        return MetricResult.unscored(MetricStatus.NO_STATEMENTS,
                                     "the answer makes no statement to verify")
    return MetricResult.scored(sum(v.supported for v in verdicts) / len(verdicts))
