"""Where the demo's telemetry goes: spans to ``DIR/spans.jsonl`` (OTLP JSON lines) or,
given an OTLP endpoint, traces and metrics to a collector; plus a bounded copy of
the exported RAG root spans for the closing table. OTLP exporters need the ``otlp`` extra."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

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


def _grpc() -> bool:
    return os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf").strip() == "grpc"


def otlp_span_exporter(endpoint: str | None) -> SpanExporter:
    """OTLP/HTTP (or gRPC when ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``) to ``endpoint``;
    ``None`` lets the exporter read ``OTEL_EXPORTER_OTLP_ENDPOINT`` itself."""
    if _grpc():
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    return HttpSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces" if endpoint else None)


def otlp_meter_provider(endpoint: str | None, service_name: str) -> MeterProvider:
    """A meter provider pushing OTLP metrics every few seconds."""
    exporter: MetricExporter
    if _grpc():
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        exporter = OTLPMetricExporter(endpoint=endpoint)
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter as HttpMetricExporter,
        )

        exporter = HttpMetricExporter(
            endpoint=f"{endpoint.rstrip('/')}/v1/metrics" if endpoint else None)
    reader = PeriodicExportingMetricReader(exporter,
                                           export_interval_millis=_METRICS_EXPORT_INTERVAL_MS)
    return MeterProvider(metric_readers=[reader],
                         resource=Resource.create({"service.name": service_name}))


def spans_path(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    return out_dir / SPANS_FILE
