"""The scorer's OpenTelemetry metrics. Instrument names are chosen so that the
Prometheus exporter's translation gives exactly these series (a test scrapes them):

| instrument | Prometheus | attributes |
| --- | --- | --- |
| histogram `ragas.faithfulness` | `ragas_faithfulness_*` | service, app, judge, model* |
| histogram `ragas.answer_relevance` | `ragas_answer_relevance_*` | service, app, judge, model* |
| histogram `ragas.context_relevance` | `ragas_context_relevance_*` | service, app, judge, model* |
| counter `ragas.faithfulness.squares` | `..._squares_total` | service, app, judge, model* |
| counter `ragas.requests` | `ragas_requests_total` | service, app, judge |
| counter `ragas.evaluations` | `ragas_evaluations_total` | service, app, judge, status |
| counter `ragas.metric.evaluations` | `ragas_metric_evaluations_total` | metric, status |
| counter `ragas.verdicts` | `ragas_verdicts_total` | service, app, judge, model, metric, label |
| counter `ragas.faithfulness.unscored` | `ragas_faithfulness_unscored_total` | see below |
| counter `ragas.scorer.dropped` | `ragas_scorer_dropped_total` | reason |
| gauge `ragas.held_spans` | `ragas_held_spans` | |
| gauge `ragas.scorer.queue_size` | `ragas_scorer_queue_size` | |
| histogram `ragas.judge.tokens` | `ragas_judge_tokens_*` | type = prompt / completion |
| histogram `ragas.judge.duration` (s) | `ragas_judge_duration_seconds_*` | judge |
| counter `ragas.judge.cost.usd` | `ragas_judge_cost_usd_total` | service, app, judge |
| counter `ragas.scorer.over_budget` | `ragas_scorer_over_budget_total` | budget |
| counter `ragas.export.lost` | `ragas_export_lost_total` | signal, reason |
| counter `ragas.annotations` | `ragas_annotations_total` | sink, outcome (see below) |
| counter `ragas.spool.requests` | `ragas_spool_requests_total` | service, app, judge, event |
| counter `ragas.spool` | `ragas_spool_total` | kind, event |
| counter `ragas.metrics.folded_labels` | `ragas_metrics_folded_labels_total` | label |
| observable counter `ragas.internal_errors` | `ragas_internal_errors_total` | where |

``ragas.requests`` counts each RAG request once, when its root span ends; once
settled it is counted once in ``ragas.evaluations`` under its status, so that (once
nothing is held, queued or in the spool) requests = the sum of
``ragas.evaluations`` over ``status``. A request spooled at exit is counted in
``ragas.spool.requests`` as ``written`` by the process that spooled it and
``claimed`` by the one that took it over (which then settles it); requests of a
process that ended without settling or spooling them (killed) are counted with
status ``lost`` by another (``exporters.lost_requests``). ``ragas.spool`` counts
spool entries (``kind`` held / span / annotation) by ``event``: ``written``,
``claimed``, ``full``, ``unwritable``, ``corrupt`` (``exporters.spool``).

``ragas.metric.evaluations`` counts each metric of each request once, whatever became
of it, so that per metric the requests in are the sum over ``status``: the metric's
own ``MetricStatus`` when the judge ran (``scored``, ``no_statements``, ``no_answer``,
``no_question``, ``no_context``, ``failed``, ``timeout``, ``skipped``), else the
request's ``EvaluationStatus`` (``not_sampled``, ``unscorable``, ``dropped``,
``failed``, ``timeout``). Per metric its sum equals that of ``ragas.evaluations``.

``ragas.internal_errors`` reads ``ragas_trace._internal_errors``: our own failures,
swallowed so the app never sees them, by the place they were caught (``where``).
The count is the process's: two pipelines in one process report the same. Anything
but zero is a bug of ours.

``ragas.verdicts`` counts each scored metric of a scored request as ``label`` =
``pass`` / ``fail`` against the thresholds of the judge that scored it: the spans'
``ragas.<metric>.label``, so a pass rate needs no threshold of its own.

``ragas.annotations`` counts Phoenix / Langfuse annotations by what the backend
confirmed: ``stored``, ``refused``, ``lost`` (each annotation ends as one of them)
and ``retried`` (each re-send).

(* ``model`` only where the answering model is known.)

``app`` and ``model`` are the labels fed by span data: each takes at most
``max_apps`` values (setting ``max_app_labels``); requests of later apps or models are
recorded as ``other``, and each is counted once in ``ragas.metrics.folded_labels``
(``label`` = ``app`` / ``model``). ``model`` is the answering model of the request
(``RagRecord.model``: ``gen_ai.request.model`` / ``llm.model_name`` of its last model
call); where it is unknown the label is absent, so ``sum by (service, app, judge)``
reads every request, with or without it.

Every series of an ``app`` is created at zero as soon as the app is known (``prime``:
at ``setup()``, when a collector is made with its ``app_name``: ``_app_names``), so
that Prometheus's
``increase()`` counts the first scores (``exporters.series_at_zero``). A model's
series are created at zero when it is first seen, and its scores carry the label from
``MODEL_LABEL_DELAY_S`` later: until then they are recorded without it (in the app's
series, already scraped at zero), so that no scrape sees a model's series first with
scores in it, which ``increase()`` would not count (a one-minute scrape interval
included).

Exemplars: each scored request's values are recorded in a context holding the
evaluated root span (a ``NonRecordingSpan``, sampled), so the SDK attaches its trace
and span id as an exemplar (trace-based filter) to the score histograms, the squares,
the verdicts and ``ragas.evaluations``: over OTLP, and on the ``metrics_port``
endpoint in OpenMetrics format (``exporters.prometheus_exemplars``).

``ragas.judge.cost.usd`` adds what each evaluation's judge tokens cost in US dollars
at the judge's prices (``ragas_trace.scorer.pricing``); a judge whose model has no
price adds nothing. ``ragas.scorer.over_budget`` counts the RAG requests not scored
because a budget was spent (``budget`` = ``token_budget`` or ``usd_budget``, the
``ragas.evaluation.reason`` of their ``not_sampled`` spans).

``ragas.export.lost`` counts spans that never reached the backend: ``queue_full``
(the export queue was full), ``export_failed`` (the exporter failed or raised),
``shutdown`` (still queued or in flight at the shutdown deadline).

`ragas_faithfulness_unscored_total` (service, app, judge, reason) counts the
requests whose faithfulness could not be computed, by ``reason``: a capture gap
(``no_question``, ``no_context``, ``no_answer``; a request can be ``scored`` on its
other metrics and still count here), ``no_statements`` (a refusal or empty answer),
``failed`` / ``timeout`` / ``unscorable`` (the judge gave no scores),
``stream_abandoned`` / ``stream_error`` (a partial answer). Not sampled and dropped
requests are not counted (they were not attempted: see the two other counters), nor
those whose faithfulness was not requested.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from ragas_trace._internal_errors import internal_error_counts
from ragas_trace.exporters.label_cap import LabelCap
from ragas_trace.exporters.lost_requests import EVALUATIONS_HELP, METRIC_EVALUATIONS_HELP
from ragas_trace.exporters.score_attributes import verdict
from ragas_trace.exporters.series_at_zero import create_at_zero
from ragas_trace.results import Metric, MetricStatus, Scores
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

METER_NAME = "ragas_trace"
DEFAULT_MAX_APPS = 100
MODEL_LABEL_DELAY_S = 120.0
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
# Floats, so that ``le`` reads the same ("50.0") from the OpenTelemetry exporter and
# from prometheus_client's multiprocess mode (exporters.multiprocess_metrics).
TOKEN_BUCKETS = (50.0, 100.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0)
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ScorerMetrics:
    """Records outcomes; the gauges read ``held`` and ``queued`` when collected."""

    def __init__(self, meter_provider: MeterProvider, service: str,
                 max_apps: int = DEFAULT_MAX_APPS) -> None:
        meter: Meter = meter_provider.get_meter(METER_NAME)
        self.service = service
        self._apps = LabelCap("app", max_apps, "max_app_labels")
        self._models = LabelCap("model", max_apps, "max_app_labels")
        # The label sets whose series exist already (see prime): a set lookup a record.
        self._primed: set[tuple[str, str, str | None]] = set()
        # When each (app, judge, model) was first seen: its label waits for its series
        # to have been scraped at zero.
        self._model_since: dict[tuple[str, str, str], float] = {}
        self._scores = {
            metric: meter.create_histogram(
                f"ragas.{metric}", description=f"Ragas {metric} of scored requests (0..1)",
                explicit_bucket_boundaries_advisory=SCORE_BUCKETS)
            for metric in Metric
        }
        # With the histogram's _sum and _count, the variance of the scores: what the
        # alert rules measure a drop in (deploy/prometheus/rules/ragas-alerts.yml).
        self._faithfulness_squares = meter.create_counter(
            "ragas.faithfulness.squares",
            description="sum of the squared faithfulness scores of scored requests")
        self._requests = meter.create_counter(
            "ragas.requests", description="RAG requests, counted when their root span ends")
        self._evaluations = meter.create_counter(
            "ragas.evaluations", description=EVALUATIONS_HELP)
        self._metric_evaluations = meter.create_counter(
            "ragas.metric.evaluations", description=METRIC_EVALUATIONS_HELP)
        self._spool_requests = meter.create_counter(
            "ragas.spool.requests",
            description="RAG requests kept in the spool at exit (written) and taken over "
                        "from it by a later process (claimed)")
        self._spool = meter.create_counter(
            "ragas.spool", description="spool entries by kind and what became of them")
        self._verdicts = meter.create_counter(
            "ragas.verdicts",
            description="scored metrics by pass / fail against the scoring judge's thresholds")
        self._faithfulness_unscored = meter.create_counter(
            "ragas.faithfulness.unscored",
            description="RAG requests whose faithfulness could not be computed, by reason")
        self._dropped = meter.create_counter(
            "ragas.scorer.dropped", description="RAG requests not scored because a bound was hit")
        self._tokens = meter.create_histogram(
            "ragas.judge.tokens", description="judge tokens per evaluation",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self._duration = meter.create_histogram(
            "ragas.judge.duration", unit="s", description="judge time per evaluation",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self._cost = meter.create_counter(
            "ragas.judge.cost.usd", unit="{USD}",
            description="what the judge's tokens cost, in US dollars at the judge's prices")
        self._over_budget = meter.create_counter(
            "ragas.scorer.over_budget",
            description="RAG requests not scored because a judge budget was spent")
        self._export_lost = meter.create_counter(
            "ragas.export.lost", description="spans that never reached the backend, by reason")
        self._annotations = meter.create_counter(
            "ragas.annotations",
            description="score annotations for Phoenix / Langfuse, by what the backend confirmed")
        self._folded = meter.create_counter(
            "ragas.metrics.folded_labels",
            description="RAG requests whose label value was recorded as 'other' (a cap)")
        self._held: Callable[[], int] = lambda: 0
        self._queued: Callable[[], int] = lambda: 0
        meter.create_observable_gauge("ragas.held_spans", callbacks=[self._observe_held],
                                      description="RAG spans held for their scores")
        meter.create_observable_gauge("ragas.scorer.queue_size",
                                      callbacks=[self._observe_queued],
                                      description="records waiting for the judge")
        meter.create_observable_counter(
            "ragas.internal_errors", callbacks=[_observe_internal_errors],
            description="ragas-trace's own failures, swallowed (a bug of ours), by place")

    def observe(self, held: Callable[[], int], queued: Callable[[], int]) -> None:
        self._held = held
        self._queued = queued

    def prime(self, app: str | None, judge: str, model: str | None = None) -> None:
        """Create at zero every series of ``app`` as ``judge`` scores it (with
        ``model``: those that carry it), so the first scores are counted by
        ``increase()``. Cheap when done already; never counts a fold."""
        self._prime(self._app(app, count=False), judge,
                    self._models.value(model)[0] if model else None)

    def _prime(self, app: str, judge: str, model: str | None) -> None:
        key = (app, judge, model)
        if key in self._primed:
            return
        self._primed.add(key)
        attrs = {"service": self.service, "app": app, "judge": judge}
        if model is None:
            create_at_zero(self._requests, attrs)
            for status in EvaluationStatus:
                create_at_zero(self._evaluations, {**attrs, "status": str(status)})
        else:
            attrs["model"] = model
        for metric, histogram in self._scores.items():
            create_at_zero(histogram, attrs)
            for label in ("pass", "fail"):
                create_at_zero(self._verdicts, {**attrs, "metric": str(metric), "label": label})
        create_at_zero(self._faithfulness_squares, attrs)

    def evaluation(self, outcome: Outcome, app: str | None, judge: str,
                   thresholds: Mapping[str, float] | None = None, *,
                   model: str | None = None, evaluated: SpanContext | None = None) -> None:
        """``thresholds``: the judge's pass thresholds, for ``ragas.verdicts``;
        ``model``: the request's answering model (the ``model`` label, None: absent);
        ``evaluated``: the evaluated root span's context, for the exemplars."""
        attrs = {"service": self.service, "app": self._app(app, count=True), "judge": judge}
        context = _exemplar_context(evaluated)
        self._evaluations.add(1, {**attrs, "status": str(outcome.status)}, context=context)
        self._count_metrics(outcome.status, outcome.scores)
        reason = faithfulness_gap(outcome)
        if reason is not None:
            self._faithfulness_unscored.add(1, {**attrs, "reason": reason})
        scores = outcome.scores
        if scores is None:
            return
        if outcome.status is EvaluationStatus.SCORED:
            labels = self._score_labels(attrs, model)
            for metric, histogram in self._scores.items():
                value = scores.result(metric).value
                if value is not None:
                    histogram.record(value, labels, context=context)
                    if thresholds is not None:
                        self._verdicts.add(1, {**labels, "metric": str(metric),
                                               "label": verdict(metric, value, thresholds)},
                                           context=context)
                    if metric is Metric.FAITHFULNESS:
                        self._faithfulness_squares.add(value * value, labels, context=context)
        self._tokens.record(scores.usage.prompt_tokens, {"type": "prompt"})
        self._tokens.record(scores.usage.completion_tokens, {"type": "completion"})
        if outcome.duration_s:
            self._duration.record(outcome.duration_s, {"judge": judge})

    def _score_labels(self, attrs: dict[str, str], model: str | None) -> dict[str, str]:
        """The scores' labels: ``attrs``, with ``model`` when known (capped; its
        series created at zero when first seen)."""
        if not model:
            return attrs
        value, folded = self._models.value(model)
        if folded:
            self._folded.add(1, {"label": self._models.label})
        key = (attrs["app"], attrs["judge"], value)
        since = self._model_since.get(key)
        if since is None:
            since = self._model_since.setdefault(key, time.monotonic())
            self._prime(*key)
        if time.monotonic() - since < MODEL_LABEL_DELAY_S:
            return attrs
        return {**attrs, "model": value}

    def cost(self, usd: float, app: str | None, judge: str) -> None:
        """What one evaluation cost (the ``app`` value it was counted under already)."""
        self._cost.add(usd, {"service": self.service, "app": self._app(app, count=False),
                             "judge": judge})

    def over_budget(self, budget: str) -> None:
        self._over_budget.add(1, {"budget": budget})

    def request(self, app: str | None, judge: str) -> None:
        """One RAG request whose root span ended (the app's thread: one counter add)."""
        self._requests.add(1, {"service": self.service, "app": self._app(app, count=False),
                               "judge": judge})

    def spool_request(self, event: str, app: str | None, judge: str) -> None:
        """A request ``written`` to the spool, or ``claimed`` from it."""
        self._spool_requests.add(1, {"service": self.service,
                                     "app": self._app(app, count=False),
                                     "judge": judge, "event": event})

    def spool(self, kind: str, event: str, n: int = 1) -> None:
        self._spool.add(n, {"kind": kind, "event": event})

    def not_scored(self, status: EvaluationStatus, app: str | None, judge: str) -> None:
        self._evaluations.add(1, {"service": self.service, "app": self._app(app, count=True),
                                  "judge": judge, "status": str(status)})
        self._count_metrics(status, None)

    def _count_metrics(self, status: EvaluationStatus, scores: Scores | None) -> None:
        """Each metric once: its own status when the judge ran, else the request's."""
        for metric in Metric:
            which = scores.result(metric).status if scores is not None else status
            self._metric_evaluations.add(1, {"metric": str(metric), "status": str(which)})

    def faithfulness_unscored(self, reason: str, app: str | None, judge: str) -> None:
        """A request the judge was not asked about (no question, partial stream)."""
        self._faithfulness_unscored.add(1, {"service": self.service,
                                            "app": self._app(app, count=False),
                                            "judge": judge, "reason": reason})

    def _app(self, app: str | None, count: bool) -> str:
        """The ``app`` label value; ``count``: this call is the request's one count in
        ``ragas.evaluations``, so a fold is counted once per request."""
        value, folded = self._apps.value(app or "")
        if folded and count:
            self._folded.add(1, {"label": self._apps.label})
        return value

    def dropped(self, reason: str) -> None:
        self._dropped.add(1, {"reason": reason})

    def export_lost(self, count: int, reason: str, signal: str = "traces") -> None:
        self._export_lost.add(count, {"signal": signal, "reason": reason})

    def annotations(self, sink: str, outcome: str, n: int = 1) -> None:
        self._annotations.add(n, {"sink": sink, "outcome": outcome})

    def _observe_held(self, options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(self._held())

    def _observe_queued(self, options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(self._queued())


def _exemplar_context(evaluated: SpanContext | None) -> Context | None:
    """A context whose current span is the evaluated root: the SDK's trace-based
    exemplar filter samples what is recorded in it (the scorer records off the
    request's thread, where no span is current). Sampled: the root was recorded."""
    if evaluated is None or not evaluated.trace_id:
        return None
    span = NonRecordingSpan(SpanContext(evaluated.trace_id, evaluated.span_id,
                                        is_remote=False,
                                        trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    return trace_api.set_span_in_context(span)


def _observe_internal_errors(options: CallbackOptions) -> Iterable[Observation]:
    for where, count in internal_error_counts().items():
        yield Observation(count, {"where": where})


def faithfulness_gap(outcome: Outcome) -> str | None:
    """Why the judge's outcome has no faithfulness (a ``MetricStatus`` value, or
    ``failed`` / ``timeout`` / ``unscorable`` when the judge gave no scores); None
    when it has one, was not requested, or the request was dropped."""
    if outcome.scores is not None:
        status = outcome.scores.result(Metric.FAITHFULNESS).status
        if status in (MetricStatus.SCORED, MetricStatus.SKIPPED):
            return None
        return str(status)
    if outcome.status in (EvaluationStatus.FAILED, EvaluationStatus.TIMEOUT,
                          EvaluationStatus.UNSCORABLE):
        return str(outcome.status)
    return None
