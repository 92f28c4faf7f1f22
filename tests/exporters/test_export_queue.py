"""ExportQueue: deadlines kept with a hanging or failing exporter, every lost span
counted by reason, in ``ragas.export.lost`` and in the return values."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragas_trace.exporters.export_queue import ExportQueue
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.waiting import finishes


class FailingExporter(SpanExporter):
    def __init__(self, *, raises: bool = False) -> None:
        self.raises = raises
        self.calls = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.calls += 1
        if self.raises:
            raise ConnectionError("endpoint down")
        return SpanExportResult.FAILURE


class HangingExporter(SpanExporter):
    """Blocks in ``export`` until released or shut down (as an OTLP exporter's retry
    loop ends at its shutdown)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.shut_down = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(60)
        return SpanExportResult.FAILURE if self.shut_down else SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.shut_down = True
        self.release.set()


def spans(count: int) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for i in range(count):
        tracer.start_span(f"s{i}").end()
    return list(exporter.get_finished_spans())


def lost_metric(reader: InMemoryMetricReader) -> dict[tuple[str, str], int]:
    data = reader.get_metrics_data()
    out: dict[tuple[str, str], int] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "ragas.export.lost":
                    for point in metric.data.data_points:
                        attrs = dict(point.attributes or {})
                        out[(str(attrs["signal"]), str(attrs["reason"]))] = int(point.value)
    return out


def counting() -> tuple[InMemoryMetricReader, Callable[[int, str], None]]:
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    return reader, metrics.export_lost


def test_delivered_spans_are_not_lost():
    reader, on_lost = counting()
    target = InMemorySpanExporter()
    queue = ExportQueue(target, on_lost=on_lost)
    for span in spans(5):
        queue.on_end(span)
    assert queue.force_flush(5000)
    assert len(target.get_finished_spans()) == 5
    assert queue.shutdown(5000)
    assert queue.delivered == 5 and not queue.lost
    assert lost_metric(reader) == {}


def test_failed_exports_are_counted_and_reported(caplog):
    reader, on_lost = counting()
    exporter = FailingExporter(raises=True)
    queue = ExportQueue(exporter, max_batch_size=2, on_lost=on_lost)
    for span in spans(5):
        queue.on_end(span)
    assert queue.force_flush(5000) is False
    assert queue.lost["export_failed"] == 5
    assert lost_metric(reader) == {("traces", "export_failed"): 5}
    assert "5 span(s) not exported" in caplog.text
    # The final account counts them again: they never reached the backend.
    assert queue.shutdown(5000) is False


def test_a_full_queue_counts_what_it_drops():
    reader, on_lost = counting()
    exporter = HangingExporter()
    queue = ExportQueue(exporter, max_queue_size=3, max_batch_size=1, on_lost=on_lost)
    try:
        batch = spans(10)
        queue.on_end(batch[0])
        assert queue.force_flush(50) is False  # the worker took it and hangs
        for span in batch[1:]:
            queue.on_end(span)
        assert queue.lost["queue_full"] == 6  # 3 queued, 6 refused
        assert lost_metric(reader)[("traces", "queue_full")] == 6
    finally:
        exporter.release.set()


def test_shutdown_keeps_its_deadline_with_a_hanging_exporter():
    reader, on_lost = counting()
    exporter = HangingExporter()
    queue = ExportQueue(exporter, max_batch_size=2, on_lost=on_lost)
    for span in spans(6):
        queue.on_end(span)
    assert finishes(lambda: queue.force_flush(100)) == [False]
    assert finishes(lambda: queue.shutdown(200)) == [False]
    assert exporter.shut_down
    # The batch in flight fails once its exporter is shut down: lost to the shutdown too.
    assert finishes(lambda: queue._worker.join(5)) == [None]
    assert queue.lost == {"shutdown": 6}
    assert lost_metric(reader) == {("traces", "shutdown"): 6}
    queue.on_end(spans(1)[0])  # after shutdown: refused, counted
    assert queue.lost["shutdown"] == 7
    assert queue.shutdown(100) is True  # safe twice


def test_sizes_come_from_the_sdk_environment_variables(monkeypatch, caplog):
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "2")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "soon")  # bad: logged, default used
    exporter = HangingExporter()
    queue = ExportQueue(exporter)
    try:
        batch = spans(4)
        queue.on_end(batch[0])
        assert queue.force_flush(50) is False  # the worker took it and hangs
        for span in batch[1:]:
            queue.on_end(span)
        assert queue.lost["queue_full"] == 1
        assert "OTEL_BSP_SCHEDULE_DELAY" in caplog.text
    finally:
        exporter.release.set()
        queue.shutdown(1000)
    with pytest.raises(ValueError, match="max_export_batch_size"):
        ExportQueue(InMemorySpanExporter(), max_batch_size=0)


def test_a_queue_smaller_than_the_batch_delivers_every_span(monkeypatch, caplog):
    # The SDK's processor refuses this setting; with the default batch of 512 the
    # queue filled and refused spans until the next scheduled export (5 s).
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "200")
    with OtlpHttpReceiver() as receiver:
        queue = ExportQueue(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
        provider = TracerProvider()
        provider.add_span_processor(queue)
        tracer = provider.get_tracer("t")
        try:
            for _ in range(1200):  # 3,600 spans, about 3 per millisecond
                rag_request(tracer)
                time.sleep(0.001)
            assert queue.force_flush(10_000)
        finally:
            provider.shutdown()
        assert queue.lost == {} and queue.delivered == 3600
        assert len(receiver.spans()) == 3600
    assert "export batch size 512 (OTEL_BSP_MAX_EXPORT_BATCH_SIZE) is larger than the " \
           "export queue 200 (OTEL_BSP_MAX_QUEUE_SIZE)" in caplog.text
