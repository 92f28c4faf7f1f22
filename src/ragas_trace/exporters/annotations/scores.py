"""One ``ScoreAnnotation`` per metric of a scored request: what every annotation
backend writes (Phoenix span annotations, Langfuse scores), built on the scorer's
thread from the held span and the judge's outcome."""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.evaluation_span import explanation
from ragas_trace.exporters.score_attributes import label, short_reason
from ragas_trace.results import Metric, MetricStatus, Scores
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

# Phoenix's annotator kinds: an LLM judge, or deterministic code (the offline
# local judge: embeddings and rules, no generative model).
LLM = "LLM"
CODE = "CODE"


@dataclass(frozen=True, slots=True)
class ScoreAnnotation:
    """One metric of one evaluated span. ``score`` is ``None`` when the metric was
    not scored; ``label`` is then its status and ``explanation`` the reason."""

    trace_id: str  # 32 hex digits, as OTLP backends show it
    span_id: str  # 16 hex digits
    name: str
    score: float | None
    label: str
    explanation: str
    annotator_kind: str
    judge: str
    threshold: float


def annotator_kind(judge: str) -> str:
    return CODE if judge.split(":", 1)[0] == "local" else LLM


def score_annotations(span: ReadableSpan, outcome: Outcome, judge: str,
                      thresholds: dict[str, float],
                      policy: ContentPolicy) -> list[ScoreAnnotation]:
    """The annotations of a scored request (none for any other outcome, or a span
    without ids). ``policy`` decides whether a statement of the answer may leave."""
    context = span.context
    if outcome.status is not EvaluationStatus.SCORED or outcome.scores is None or not context:
        return []
    scores = outcome.scores
    out: list[ScoreAnnotation] = []
    for metric in Metric:
        result = scores.result(metric)
        if result.status is MetricStatus.SKIPPED:
            continue
        threshold = thresholds.get(str(metric), 0.5)
        out.append(ScoreAnnotation(
            trace_id=f"{context.trace_id:032x}", span_id=f"{context.span_id:016x}",
            name=str(metric), score=result.value,
            label=(label(result.value, threshold) if result.value is not None
                   else str(result.status)),
            explanation=_explain(metric, scores, policy),
            annotator_kind=annotator_kind(judge), judge=judge, threshold=threshold))
    return out


def _explain(metric: Metric, scores: Scores, policy: ContentPolicy) -> str:
    """The first unsupported statement for faithfulness (what a reviewer checks
    first), when the content policy lets it out; else the counts or the reason."""
    result = scores.result(metric)
    if metric is Metric.FAITHFULNESS and result.value is not None:
        unsupported = next((s for s in scores.statements if not s.supported), None)
        text = policy.text(unsupported.statement) if unsupported is not None else None
        if text:
            return short_reason(f"unsupported: {text}")
    return explanation(metric, result, scores)
