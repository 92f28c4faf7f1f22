"""The scorer's OpenTelemetry metrics. Instrument names are chosen so that the
Prometheus exporter's translation gives exactly these series (a test scrapes them):

| instrument | Prometheus | attributes |
| --- | --- | --- |
| histogram `ragas.faithfulness` | `ragas_faithfulness_bucket/_sum/_count` | service, app, judge |
| histogram `ragas.answer_relevance` | `ragas_answer_relevance_*` | service, app, judge |
| histogram `ragas.context_relevance` | `ragas_context_relevance_*` | service, app, judge |
| counter `ragas.faithfulness.squares` | `ragas_faithfulness_squares_total` | service, app, judge |
| counter `ragas.evaluations` | `ragas_evaluations_total` | service, app, judge, status |
| counter `ragas.scorer.dropped` | `ragas_scorer_dropped_total` | reason |
| gauge `ragas.held_spans` | `ragas_held_spans` | |
| gauge `ragas.scorer.queue_size` | `ragas_scorer_queue_size` | |
| histogram `ragas.judge.tokens` | `ragas_judge_tokens_*` | type = prompt / completion |
| histogram `ragas.judge.duration` (s) | `ragas_judge_duration_seconds_*` | judge |
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from ragas_trace.results import Metric
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

METER_NAME = "ragas_trace"
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TOKEN_BUCKETS = (50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000)
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ScorerMetrics:
    """Records outcomes; the gauges read ``held`` and ``queued`` when collected."""

    def __init__(self, meter_provider: MeterProvider, service: str) -> None:
        meter: Meter = meter_provider.get_meter(METER_NAME)
        self.service = service
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
        self._evaluations = meter.create_counter(
            "ragas.evaluations", description="RAG requests by evaluation status")
        self._dropped = meter.create_counter(
            "ragas.scorer.dropped", description="RAG requests not scored because a bound was hit")
        self._tokens = meter.create_histogram(
            "ragas.judge.tokens", description="judge tokens per evaluation",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self._duration = meter.create_histogram(
            "ragas.judge.duration", unit="s", description="judge time per evaluation",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self._held: Callable[[], int] = lambda: 0
        self._queued: Callable[[], int] = lambda: 0
        meter.create_observable_gauge("ragas.held_spans", callbacks=[self._observe_held],
                                      description="RAG spans held for their scores")
        meter.create_observable_gauge("ragas.scorer.queue_size",
                                      callbacks=[self._observe_queued],
                                      description="records waiting for the judge")

    def observe(self, held: Callable[[], int], queued: Callable[[], int]) -> None:
        self._held = held
        self._queued = queued

    def evaluation(self, outcome: Outcome, app: str | None, judge: str) -> None:
        attrs = {"service": self.service, "app": app or "", "judge": judge}
        self._evaluations.add(1, {**attrs, "status": str(outcome.status)})
        scores = outcome.scores
        if scores is None:
            return
        if outcome.status is EvaluationStatus.SCORED:
            for metric, histogram in self._scores.items():
                value = scores.result(metric).value
                if value is not None:
                    histogram.record(value, attrs)
                    if metric is Metric.FAITHFULNESS:
                        self._faithfulness_squares.add(value * value, attrs)
        self._tokens.record(scores.usage.prompt_tokens, {"type": "prompt"})
        self._tokens.record(scores.usage.completion_tokens, {"type": "completion"})
        if outcome.duration_s:
            self._duration.record(outcome.duration_s, {"judge": judge})

    def not_scored(self, status: EvaluationStatus, app: str | None, judge: str) -> None:
        self._evaluations.add(1, {"service": self.service, "app": app or "", "judge": judge,
                                  "status": str(status)})

    def dropped(self, reason: str) -> None:
        self._dropped.add(1, {"reason": reason})

    def _observe_held(self, options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(self._held())

    def _observe_queued(self, options: CallbackOptions) -> Iterable[Observation]:
        yield Observation(self._queued())
