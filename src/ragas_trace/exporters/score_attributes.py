"""The ``ragas.*`` attributes written on an evaluated span."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.util.types import AttributeValue

from ragas_trace import semconv as sc
from ragas_trace.results import Metric, MetricStatus
from ragas_trace.scorer.outcome import Outcome

PASS: str = "pass"
FAIL: str = "fail"
# Reasons come from judges and HTTP errors: bounded, so that a verbose error
# cannot carry a reply (or anything else) of unbounded size onto spans.
MAX_REASON_CHARS = 200


def short_reason(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"


def label(value: float, threshold: float) -> str:
    return PASS if value >= threshold else FAIL


def verdict(metric: Metric, value: float, thresholds: Mapping[str, float]) -> str:
    """``metric``'s pass / fail against ``thresholds`` (the judge's; 0.5 if it has none)."""
    return label(value, thresholds.get(str(metric), 0.5))


# What the collector did not find, as the judge reports it per metric.
_CAPTURE_GAPS = (MetricStatus.NO_QUESTION, MetricStatus.NO_CONTEXT, MetricStatus.NO_ANSWER)


def capture_gap(outcome: Outcome) -> str | None:
    """``no_context`` etc. (comma-joined) when some metric had no question, passages or
    answer to work on: the reason of a request scored on its other metrics."""
    if outcome.scores is None:
        return None
    statuses = {r.status for r in outcome.scores.results.values()}
    gaps = [str(g) for g in _CAPTURE_GAPS if g in statuses]
    return ",".join(sorted(gaps)) or None


def score_attributes(outcome: Outcome, judge: str | None,
                     thresholds: Mapping[str, float]) -> dict[str, AttributeValue]:
    """Status and reason always; scores, labels and judge cost when the judge ran."""
    attrs: dict[str, AttributeValue] = {sc.RAGAS_EVALUATION_STATUS: str(outcome.status)}
    if outcome.reason:
        attrs[sc.RAGAS_EVALUATION_REASON] = short_reason(outcome.reason)
    if judge:
        attrs[sc.RAGAS_EVALUATION_JUDGE] = judge
    if outcome.duration_s:
        attrs[sc.RAGAS_EVALUATION_DURATION_MS] = round(outcome.duration_s * 1000.0, 3)
    scores = outcome.scores
    if scores is None:
        return attrs
    gap = capture_gap(outcome)
    if gap is not None and sc.RAGAS_EVALUATION_REASON not in attrs:
        attrs[sc.RAGAS_EVALUATION_REASON] = gap
    for metric in Metric:
        result = scores.result(metric)
        if result.status is MetricStatus.SKIPPED and not result.reason:
            continue  # not requested; a skip with a reason (an input limit) is shown
        # Every metric the judge was asked about says what became of it, ``scored``
        # included, so that one filter (``ragas.faithfulness.status``) finds each kind.
        attrs[sc.metric_status_attribute(metric)] = str(result.status)
        if result.value is not None:
            attrs[sc.metric_attribute(metric)] = result.value
            attrs[sc.metric_label_attribute(metric)] = verdict(metric, result.value,
                                                               thresholds)
    attrs[sc.RAGAS_JUDGE_PROMPT_TOKENS] = scores.usage.prompt_tokens
    attrs[sc.RAGAS_JUDGE_COMPLETION_TOKENS] = scores.usage.completion_tokens
    if scores.usage.invalid_usage:
        attrs[sc.RAGAS_JUDGE_INVALID_USAGE] = scores.usage.invalid_usage
    if scores.statements:
        attrs[sc.RAGAS_STATEMENTS_TOTAL] = len(scores.statements)
        attrs[sc.RAGAS_STATEMENTS_SUPPORTED] = sum(1 for s in scores.statements if s.supported)
    if scores.context_sentences:
        attrs[sc.RAGAS_CONTEXT_SENTENCES] = scores.context_sentences
        attrs[sc.RAGAS_CONTEXT_SENTENCES_KEPT] = len(scores.kept_sentences)
    return attrs
