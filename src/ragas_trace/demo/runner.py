"""Run the demo end to end: the demo chain with the one LangChain callback from
``ragas_trace.setup()``, every request scored in the background, spans exported to a
file or a collector, optionally a Prometheus endpoint; then the rows for the table."""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

import ragas_trace
from ragas_trace import providers
from ragas_trace._settings import resolve
from ragas_trace.config import SETTINGS, Settings
from ragas_trace.demo.app import APP_NAME, build_chain
from ragas_trace.demo.behaviour import Behaviour
from ragas_trace.demo.corpus import QUESTIONS, DemoQuestion
from ragas_trace.demo.exporting import (
    Delivery,
    FanOutExporter,
    ScoredRootsExporter,
    otlp_meter_provider,
    otlp_span_exporter,
    spans_path,
)
from ragas_trace.demo.recording import RecordingJudge
from ragas_trace.demo.report import RequestRow, rows_from_spans
from ragas_trace.judges import resolve_judge
from ragas_trace.setup import otlp_metrics_wanted, service_resource

logger = logging.getLogger(__name__)

DEFAULT_SERVICE = "ragas-trace-demo"


@dataclass(frozen=True)
class DemoOptions:
    requests: int = 40
    out_dir: Path | None = Path("demo-out")
    judge: str = "local"
    drift: bool = False
    metrics_port: int | None = None
    otlp_endpoint: str | None = None
    seed: int = 0
    service_name: str | None = None
    interval_s: float = 0.0
    linger_s: float = 0.0
    hallucination_rate: float = 0.1
    evasion_rate: float = 0.05
    drift_to: float = 0.8
    drift_requests: int | None = None  # requests over which the drift happens (all)
    flush_timeout_s: float = 120.0

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise ValueError(f"requests must be at least 1, got {self.requests}")
        if self.drift_requests is not None and self.drift_requests < 1:
            raise ValueError(f"drift_requests must be at least 1, got {self.drift_requests}")
        if self.interval_s < 0 or self.linger_s < 0:
            raise ValueError("interval_s and linger_s must not be negative")


@dataclass(frozen=True)
class DemoResult:
    rows: list[RequestRow]
    spans_file: Path | None
    elapsed_s: float
    requests: int
    # Per OTLP signal ("spans", "metrics") exported: what was delivered, and where.
    delivery: dict[str, Delivery] = field(default_factory=dict)
    # The pass thresholds the rows' labels were made with (the judge's own).
    thresholds: dict[str, float] = field(default_factory=dict)

    @property
    def unscored(self) -> dict[str, int]:
        """Requests that were not scored, by their evaluation status (``no span``: a
        request whose root span never came back); empty when all were scored."""
        counts = Counter(row.status for row in self.rows if row.status != "scored")
        if len(self.rows) < self.requests:
            counts["no span"] = self.requests - len(self.rows)
        return dict(counts)

    @property
    def scoring_finished(self) -> bool:
        return not self.unscored


Progress = Callable[[str, int, int], None]


def questions(seed: int) -> Iterator[DemoQuestion]:
    """The demo questions in a seeded order, reshuffled each round."""
    rng = random.Random(seed)
    while True:
        order = list(QUESTIONS)
        rng.shuffle(order)
        yield from order


def _project_routing() -> bool:
    """``project_from_service``, on unless the environment turns it off: the demo's
    spans land in a Phoenix project named after its service."""
    (setting,) = (s for s in SETTINGS if s.name == "project_from_service")
    return bool(resolve(dataclasses.replace(setting, default=True), None, os.environ))


def run_demo(options: DemoOptions, progress: Progress | None = None) -> DemoResult:
    started = time.monotonic()
    report = progress or (lambda phase, done, total: None)
    service = options.service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE
    shown = ScoredRootsExporter()
    exporters: list[SpanExporter] = [shown]
    spans_file: Path | None = None
    meter_provider = None
    delivery: dict[str, Delivery] = {}
    if options.otlp_endpoint or providers.otlp_configured("traces"):
        span_exporter = otlp_span_exporter(options.otlp_endpoint)
        exporters.append(span_exporter)
        delivery["spans"] = span_exporter.delivery
        # Not to Phoenix or Langfuse, which take no metrics (405 / UNIMPLEMENTED).
        if options.metrics_port is None and \
                otlp_metrics_wanted(Settings.load(), options.otlp_endpoint):
            meter_provider, delivery["metrics"] = otlp_meter_provider(options.otlp_endpoint,
                                                                      service)
    elif options.out_dir is not None:
        spans_file = spans_path(options.out_dir)
        spans_file.unlink(missing_ok=True)
        from ragas_trace.exporters.otlp_json import OtlpJsonFileExporter

        exporters.append(OtlpJsonFileExporter(spans_file))
    judge = RecordingJudge(resolve_judge(options.judge))
    # A private provider: the demo never installs or joins a global one, so it can
    # run twice in one process (tests) and never mixes with the caller's telemetry.
    tracer_provider = TracerProvider(resource=service_resource(service, _project_routing()))
    rt = ragas_trace.setup(
        service_name=service,
        exporter=FanOutExporter(exporters),
        judge=judge,
        sample_rate=1.0,
        metrics_port=options.metrics_port,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    try:
        handler = rt.langchain_handler(app_name=APP_NAME)
        behaviour = Behaviour(
            hallucination_rate=options.hallucination_rate,
            evasion_rate=options.evasion_rate,
            drift_to=options.drift_to if options.drift else None,
            drift_requests=options.drift_requests or options.requests,
            seed=options.seed,
        )
        chain = build_chain(behaviour)
        asked = questions(options.seed)
        for done in range(options.requests):
            chain.invoke(next(asked).text, config={"callbacks": [handler]})
            report("requests", done + 1, options.requests)
            if options.interval_s:
                time.sleep(options.interval_s)
        report("scoring", 0, 1)
        # What was not scored or not delivered is read from the spans and the
        # delivery counts afterwards: this bool cannot tell the two apart.
        rt.force_flush(timeout_s=options.flush_timeout_s)
        report("scoring", 1, 1)
        if options.linger_s:
            report("lingering", 0, 1)
            time.sleep(options.linger_s)
    finally:
        stopping = time.monotonic()
        clean = rt.shutdown(timeout_s=options.flush_timeout_s)
        took = time.monotonic() - stopping
        # A False with time to spare means spans not delivered: the delivery counts
        # and the statuses of the rows say which, so only a real timeout is logged.
        if not clean and took >= options.flush_timeout_s:
            logger.warning("ragas-trace did not shut down within %.0f s",
                           options.flush_timeout_s)
        tracer_provider.shutdown()
        if meter_provider is not None:
            meter_provider.shutdown()
    thresholds = dict(rt.processor.thresholds)
    rows = rows_from_spans(shown.spans(), judge.scores_for, thresholds)
    return DemoResult(rows, spans_file, time.monotonic() - started, options.requests,
                      delivery, thresholds)

