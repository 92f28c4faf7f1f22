"""The OpenTelemetry GenAI evaluation event as log records: for every metric the
judge was asked about, one ``gen_ai.evaluation.result`` log record emitted through
the Logs API in the evaluated span's context (its trace id and span id), so that a
logs backend (Loki, Elasticsearch, a Collector's logs pipeline) gets the scores and
can join them to the request's trace.

Attributes: ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.value`` and
``gen_ai.evaluation.score.label`` (pass / fail against the threshold) when scored,
``gen_ai.evaluation.explanation``, ``error.type`` (``failed`` / ``timeout``) when
the judge failed on the metric, ``gen_ai.response.id`` of the model call that
answered where an instrumentation recorded it, and ``ragas.evaluation.judge`` (the
judge's identity). The explanation goes through the content policy: the first
unsupported statement of the answer only where content may leave, else counts and
statuses."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from opentelemetry import trace as trace_api
from opentelemetry._logs import LoggerProvider, LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.util.types import AttributeValue

from ragas_trace import semconv as sc
from ragas_trace.exporters.annotations.scores import explain
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.evaluation_span import metric_results
from ragas_trace.exporters.score_attributes import label
from ragas_trace.results import Metric, MetricResult, MetricStatus, Scores
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

SCOPE = "ragas_trace"
# Outcomes of records the judge was asked about (not those dropped or refused first).
_JUDGED = frozenset({EvaluationStatus.SCORED, EvaluationStatus.UNSCORABLE,
                     EvaluationStatus.FAILED, EvaluationStatus.TIMEOUT})
_ERRORS = frozenset({MetricStatus.FAILED, MetricStatus.TIMEOUT})

Attrs = dict[str, AttributeValue]


def _judged_scores(outcome: Outcome, judge: str) -> Scores | None:
    """The outcome's scores; for a failure without any (timeout, open circuit) every
    metric failed with the outcome's status and reason."""
    if outcome.status not in _JUDGED:
        return None
    if outcome.scores is not None:
        return outcome.scores
    if outcome.status not in (EvaluationStatus.FAILED, EvaluationStatus.TIMEOUT):
        return None
    status = MetricStatus(str(outcome.status))
    return Scores(judge, {m: MetricResult.unscored(status, outcome.reason) for m in Metric})


def evaluation_results(outcome: Outcome, judge: str, thresholds: Mapping[str, float],
                       policy: ContentPolicy, response_id: str | None = None
                       ) -> Iterator[Attrs]:
    """The attributes of each ``gen_ai.evaluation.result`` record of ``outcome``."""
    scores = _judged_scores(outcome, judge)
    if scores is None:
        return
    for metric, result in metric_results(scores):
        attrs: Attrs = {sc.GEN_AI_EVALUATION_NAME: str(metric)}
        if result.value is not None:
            attrs[sc.GEN_AI_EVALUATION_SCORE_VALUE] = result.value
            attrs[sc.GEN_AI_EVALUATION_SCORE_LABEL] = label(
                result.value, thresholds.get(str(metric), 0.5))
        elif result.status in _ERRORS:
            attrs[sc.ERROR_TYPE] = str(result.status)
        attrs[sc.GEN_AI_EVALUATION_EXPLANATION] = explain(metric, scores, policy)
        if response_id:
            attrs[sc.GEN_AI_RESPONSE_ID] = response_id
        attrs[sc.RAGAS_EVALUATION_JUDGE] = judge
        yield attrs


class EvaluationLogs:
    """Emits the records through ``logger_provider`` (whose processors export them).
    Called on the scorer thread; the SDK's batch processor keeps it from blocking."""

    def __init__(self, logger_provider: LoggerProvider, policy: ContentPolicy,
                 thresholds: Mapping[str, float]) -> None:
        self.logger_provider = logger_provider
        self._logger = logger_provider.get_logger(SCOPE)
        self._policy = policy
        self._thresholds = dict(thresholds)

    def emit(self, span: ReadableSpan, outcome: Outcome, judge: str,
             response_id: str | None = None) -> int:
        """The records of ``span``'s evaluation; returns how many were emitted."""
        target = span.context
        if target is None or not target.is_valid:
            return 0
        context = trace_api.set_span_in_context(trace_api.NonRecordingSpan(target), Context())
        now = time.time_ns()
        emitted = 0
        for attrs in evaluation_results(outcome, judge, self._thresholds, self._policy,
                                        response_id):
            failed = sc.ERROR_TYPE in attrs
            self._logger.emit(LogRecord(
                timestamp=now, context=context, event_name=sc.GEN_AI_EVALUATION_RESULT,
                severity_number=SeverityNumber.WARN if failed else SeverityNumber.INFO,
                severity_text="WARN" if failed else "INFO", attributes=attrs))
            emitted += 1
        return emitted
