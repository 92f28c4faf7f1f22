"""The evaluation record of a scored request, in both standard shapes at once:

- OpenInference: a span of kind EVALUATOR with exactly one link to the evaluated
  span and ``evaluations.{i}.evaluation.name/score/label/explanation``;
- OpenTelemetry GenAI: one ``gen_ai.evaluation.result`` event per metric.

The span is the root of a trace of its own: parented to the evaluated span it
would stretch that trace's duration by the judge's time (trace latency in Phoenix,
Tempo and Jaeger is first start to last end of all its spans), so the app's
latency would report the scoring. The link (and ``ragas.evaluation.trace_id`` on
the evaluated span, when we export it) connects the two. It reaches backends even
when the evaluated span itself was exported by another processor before it was
scored. Explanations are counts and statuses, never request content."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.util.types import AttributeValue

from ragas_trace import semconv as sc
from ragas_trace.exporters.score_attributes import label, short_reason
from ragas_trace.results import Metric, MetricResult, MetricStatus, Scores
from ragas_trace.scorer.outcome import Outcome

SPAN_NAME = "ragas.evaluation"
SCOPE = InstrumentationScope("ragas_trace")
_ids = RandomIdGenerator()

Attrs = dict[str, AttributeValue]


# Why a metric carries no number, in words a reader of a score card understands.
_STATUS_PHRASES: Mapping[MetricStatus, str] = {
    MetricStatus.NO_STATEMENTS: "the answer makes no claim to check (a refusal or empty)",
    MetricStatus.NO_ANSWER: "the request produced no answer",
    MetricStatus.NO_QUESTION: "no question was captured",
    MetricStatus.NO_CONTEXT: "nothing was retrieved",
    MetricStatus.FAILED: "the judge failed",
    MetricStatus.TIMEOUT: "the judge did not answer in time",
    MetricStatus.SKIPPED: "not requested",
}


def explanation(metric: Metric, result: MetricResult, scores: Scores) -> str:
    """A content-free explanation: counts for scored metrics; what the status means
    (and the judge's reason, which names limits and errors, never content) otherwise."""
    if result.value is None:
        phrase = _STATUS_PHRASES.get(result.status, str(result.status))
        return short_reason(f"{result.status}: {phrase}"
                            + (f" ({result.reason})" if result.reason else ""))
    if metric is Metric.FAITHFULNESS and scores.statements:
        supported = sum(1 for s in scores.statements if s.supported)
        return f"{supported} of {len(scores.statements)} statements supported by the context"
    if metric is Metric.CONTEXT_RELEVANCE and scores.context_sentences:
        return (f"{len(scores.kept_sentences)} of {scores.context_sentences} context "
                "sentences needed to answer")
    if metric is Metric.ANSWER_RELEVANCE and scores.generated_questions:
        return (f"mean similarity to the question of {len(scores.generated_questions)} "
                "questions generated from the answer")
    if metric is Metric.ANSWER_RELEVANCE:
        return "similarity of the answer to the question"
    return f"{metric}: {result.value:.2f}"


def metric_results(scores: Scores) -> Iterator[tuple[Metric, MetricResult]]:
    """The metrics the judge was asked about (a skip with a reason is one), in order."""
    for metric in Metric:
        result = scores.result(metric)
        if result.status is not MetricStatus.SKIPPED or result.reason:
            yield metric, result


def evaluation_attributes(outcome: Outcome, judge: str,
                          thresholds: Mapping[str, float]) -> Attrs:
    attrs: Attrs = {
        sc.SPAN_KIND: sc.KIND_EVALUATOR,
        sc.RAGAS_EVALUATION_STATUS: str(outcome.status),
        sc.RAGAS_EVALUATION_JUDGE: judge,
    }
    if outcome.scores is None:
        return attrs
    for i, (metric, result) in enumerate(metric_results(outcome.scores)):
        prefix = f"{sc.EVALUATIONS}.{i}."
        attrs[prefix + sc.EVALUATION_NAME] = str(metric)
        if result.value is not None:
            attrs[prefix + sc.EVALUATION_SCORE] = result.value
            attrs[prefix + sc.EVALUATION_LABEL] = label(result.value,
                                                        thresholds.get(str(metric), 0.5))
        attrs[prefix + sc.EVALUATION_EXPLANATION] = explanation(metric, result, outcome.scores)
    return attrs


def evaluation_events(outcome: Outcome, thresholds: Mapping[str, float]
                      ) -> Iterator[tuple[str, Attrs]]:
    if outcome.scores is None:
        return
    for metric, result in metric_results(outcome.scores):
        attrs: Attrs = {sc.GEN_AI_EVALUATION_NAME: str(metric)}
        if result.value is not None:
            attrs[sc.GEN_AI_EVALUATION_SCORE_VALUE] = result.value
            attrs[sc.GEN_AI_EVALUATION_SCORE_LABEL] = label(result.value,
                                                            thresholds.get(str(metric), 0.5))
        elif result.status in (MetricStatus.FAILED, MetricStatus.TIMEOUT):
            attrs[sc.ERROR_TYPE] = str(result.status)
        attrs[sc.GEN_AI_EVALUATION_EXPLANATION] = explanation(metric, result, outcome.scores)
        yield sc.GEN_AI_EVALUATION_RESULT, attrs


def new_trace_id() -> int:
    """The id of an evaluation span's own trace (chosen before the span is built, so
    the evaluated span can name it)."""
    return _ids.generate_trace_id()


def build_evaluation_span(evaluated: ReadableSpan, outcome: Outcome, judge: str,
                          thresholds: Mapping[str, float], trace_id: int | None = None,
                          project: str | None = None) -> ReadableSpan | None:
    """A finished EVALUATOR span for ``evaluated``, root of trace ``trace_id`` (default:
    a new one), in the evaluated span's resource (with Phoenix project ``project``
    when given), or ``None`` if ``evaluated`` has no context."""
    target = evaluated.context
    if target is None:
        return None
    end = time.time_ns()
    start = end - int(outcome.duration_s * 1e9)
    context = trace_api.SpanContext(trace_id or new_trace_id(), _ids.generate_span_id(),
                                    is_remote=False, trace_flags=target.trace_flags)
    events = [Event(name, attrs, timestamp=end)
              for name, attrs in evaluation_events(outcome, thresholds)]
    return ReadableSpan(
        name=SPAN_NAME,
        context=context,
        parent=None,
        resource=(evaluated.resource if project is None else evaluated.resource.merge(
            Resource({sc.OPENINFERENCE_PROJECT_NAME: project}))),
        attributes=evaluation_attributes(outcome, judge, thresholds),
        events=events,
        links=[trace_api.Link(target)],
        kind=trace_api.SpanKind.INTERNAL,
        start_time=start,
        end_time=end,
        instrumentation_scope=SCOPE,
    )


def emit_evaluation_span(tracer: trace_api.Tracer, evaluated: ReadableSpan, outcome: Outcome,
                         judge: str, thresholds: Mapping[str, float]) -> None:
    """The same span, started through ``tracer`` (for a provider whose own processors
    export everything: ``setup()`` on top of ``opentelemetry-instrument``); an empty
    context makes it the root of a new trace."""
    target = evaluated.context
    if target is None:
        return
    end = time.time_ns()
    span = tracer.start_span(SPAN_NAME, context=Context(), links=[trace_api.Link(target)],
                             attributes=evaluation_attributes(outcome, judge, thresholds),
                             start_time=end - int(outcome.duration_s * 1e9))
    for name, attrs in evaluation_events(outcome, thresholds):
        span.add_event(name, attrs, timestamp=end)
    span.end(end_time=end)
