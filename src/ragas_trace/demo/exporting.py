"""Where the demo's telemetry goes: spans to ``DIR/spans.jsonl`` (OTLP JSON lines) or,
given an OTLP endpoint, traces and metrics to a collector (endpoints resolved as
``providers`` does for ``setup()``, with what each signal delivered counted for the
summary); plus a bounded copy of the exported RAG root spans for the closing table.
OTLP exporters need the ``otlp`` extra."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace import providers
from ragas_trace.demo.report import is_evaluated_root

logger = logging.getLogger(__name__)

SPANS_FILE = "spans.jsonl"
_METRICS_EXPORT_INTERVAL_MS = 5000


class FanOutExporter(SpanExporter):
    """Exports each batch to every child; one failing child does not stop the others."""

    def __init__(self, exporters: Sequence[SpanExporter]) -> None:
        self._exporters = tuple(exporters)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.SUCCESS
        for exporter in self._exporters:
            try:
                if exporter.export(spans) is not SpanExportResult.SUCCESS:
                    result = SpanExportResult.FAILURE
            except Exception:
                logger.exception("span exporter %s failed", type(exporter).__name__)
                result = SpanExportResult.FAILURE
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all([e.force_flush(timeout_millis) for e in self._exporters])

    def shutdown(self) -> None:
        for exporter in self._exporters:
            exporter.shutdown()


class ScoredRootsExporter(SpanExporter):
    """Keeps the last ``capacity`` RAG root spans as exported (those carrying an
    evaluation status) for the closing table; everything else is ignored."""

    def __init__(self, capacity: int = 10_000) -> None:
        self._spans: deque[ReadableSpan] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        roots = [s for s in spans if is_evaluated_root(s)]
        with self._lock:
            self._spans.extend(roots)
        return SpanExportResult.SUCCESS

    def spans(self) -> list[ReadableSpan]:
        with self._lock:
            return list(self._spans)


@dataclass
class Delivery:
    """What one signal's OTLP exporter delivered: items (spans, or metric exports)
    sent and failed, and where to."""

    endpoint: str
    sent: int = 0
    failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, n: int, ok: bool) -> None:
        with self._lock:
            if ok:
                self.sent += n
            else:
                self.failed += n


class CountingSpanExporter(SpanExporter):
    """``exporter``, with the spans of each export counted in ``delivery``."""

    def __init__(self, exporter: SpanExporter, delivery: Delivery) -> None:
        self._exporter = exporter
        self.delivery = delivery

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = SpanExportResult.FAILURE
        try:
            result = self._exporter.export(spans)
        finally:
            self.delivery.count(len(spans), result is SpanExportResult.SUCCESS)
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._exporter.shutdown()


class CountingMetricExporter(MetricExporter):
    """``exporter``, with each export counted in ``delivery``."""

    def __init__(self, exporter: MetricExporter, delivery: Delivery) -> None:
        super().__init__(preferred_temporality=exporter._preferred_temporality,
                         preferred_aggregation=exporter._preferred_aggregation)
        self._exporter = exporter
        self.delivery = delivery

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
               **kwargs: Any) -> MetricExportResult:
        result = MetricExportResult.FAILURE
        try:
            result = self._exporter.export(metrics_data, timeout_millis=timeout_millis,
                                           **kwargs)
        finally:
            self.delivery.count(1, result is MetricExportResult.SUCCESS)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self._exporter.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._exporter.shutdown(timeout_millis=timeout_millis, **kwargs)


def otlp_span_exporter(endpoint: str | None) -> CountingSpanExporter:
    """The OTLP span exporter ``setup()`` would use, to ``endpoint`` (base or traces
    URL) or, when None, the one the environment names; deliveries counted."""
    delivery = Delivery(providers.otlp_endpoint("traces", endpoint) or "the default endpoint")
    return CountingSpanExporter(providers.otlp_span_exporter(endpoint), delivery)


def otlp_meter_provider(endpoint: str | None, service_name: str
                        ) -> tuple[MeterProvider, Delivery]:
    """A meter provider pushing OTLP metrics every few seconds, deliveries counted."""
    delivery = Delivery(providers.otlp_endpoint("metrics", endpoint)
                        or "the default endpoint")
    exporter = CountingMetricExporter(providers.otlp_metric_exporter(endpoint), delivery)
    reader = PeriodicExportingMetricReader(exporter,
                                           export_interval_millis=_METRICS_EXPORT_INTERVAL_MS)
    provider = MeterProvider(metric_readers=[reader],
                             resource=Resource.create({"service.name": service_name}))
    return provider, delivery


def spans_path(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir / SPANS_FILE
