import gc
import threading
import time
from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace._internal_errors import internal_error_counts
from ragas_trace.gateway.convert import RequestSpans
from ragas_trace.gateway.forward import ForwardQueue
from ragas_trace.gateway.stats import GatewayStats
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.rag_traces import plain_request
from weak_watch import WatchingExporter, alive


class Recorder(SpanExporter):
    def __init__(self, fail: int = 0) -> None:
        self.batches: list[Sequence[ReadableSpan]] = []
        self.fail = fail
        self.gate = threading.Event()
        self.gate.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        assert self.gate.wait(10)
        if self.fail:
            self.fail -= 1
            return SpanExportResult.FAILURE
        self.batches.append(spans)
        return SpanExportResult.SUCCESS


def _request(n: int = 2) -> tuple[RequestSpans, list[ReadableSpan]]:
    tracing = InMemoryTracing()
    for i in range(n):
        plain_request(tracing.tracer, i)
    request = encode_spans(tracing.spans())
    spans = list(tracing.spans())
    return RequestSpans(len(spans), request, raw=request.SerializeToString()), spans


def test_whole_requests_leave_as_one_batch_and_singles_are_batched() -> None:
    recorder, stats = Recorder(), GatewayStats()
    queue = ForwardQueue(recorder, stats, max_spans=100, max_batch=3)
    whole, singles = _request()
    for span in singles:
        queue.on_end(span)
    queue.offer(whole)
    assert queue.force_flush(5_000)
    assert queue.close(5.0)
    sizes = [len(b) for b in recorder.batches]
    assert sum(sizes) == 8 and max(sizes) <= 4
    assert any(isinstance(b, RequestSpans) for b in recorder.batches)
    assert stats.spans_forwarded == 8
    assert {s.name for s in whole} == {s.name for s in singles}  # materialized on demand


def test_a_full_queue_drops_and_counts() -> None:
    recorder, stats = Recorder(), GatewayStats()
    recorder.gate.clear()  # downstream stalls: the first batch stays in flight
    queue = ForwardQueue(recorder, stats, max_spans=10)
    whole, singles = _request(3)
    assert queue.admits(6) and not queue.admits(10)
    queue.offer(whole)
    for span in singles * 2:
        queue.on_end(span)
    assert stats.spans_dropped["forward_queue_full"] == 8
    assert queue.pending() == 10
    recorder.gate.set()
    assert queue.close(5.0)
    assert stats.spans_forwarded == 10


def test_failed_exports_are_retried() -> None:
    recorder, stats = Recorder(fail=2), GatewayStats()
    queue = ForwardQueue(recorder, stats, retry_for_s=10.0)
    whole, _ = _request()
    queue.offer(whole)
    assert queue.close(10.0)
    assert stats.export_retries == 2
    assert stats.spans_forwarded == 4


class ClosingChannel(SpanExporter):
    """Like the gRPC exporter: an export in flight when ``shutdown`` closes the
    channel fails with ValueError."""

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.exporting = threading.Event()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.exporting.set()
        self.closed.wait(10)
        raise ValueError("Cannot invoke RPC on closed channel!")

    def shutdown(self) -> None:
        self.closed.set()


def test_an_export_cut_by_close_is_a_counted_drop_not_an_internal_error() -> None:
    exporter, stats = ClosingChannel(), GatewayStats()
    queue = ForwardQueue(exporter, stats, workers=1)
    whole, _ = _request()
    before = internal_error_counts().get("gateway.forward.export", 0)
    queue.offer(whole)
    assert exporter.exporting.wait(5)
    assert not queue.close(0.2)
    deadline = time.monotonic() + 5
    while stats.spans_dropped["downstream_unavailable"] < len(whole) \
            and time.monotonic() < deadline:
        time.sleep(0.02)
    assert stats.spans_dropped["downstream_unavailable"] == len(whole)
    assert internal_error_counts().get("gateway.forward.export", 0) == before


def test_batches_are_bounded_in_bytes_and_a_too_large_span_is_dropped() -> None:
    from ragas_trace.gateway.convert import Limits, convert_request
    from ragas_trace.gateway.downstream import encode_batch

    tracing = InMemoryTracing()
    for i in range(10):
        with tracing.tracer.start_as_current_span(f"s{i}", attributes={"blob": "x" * 300_000}):
            pass
    with tracing.tracer.start_as_current_span("huge", attributes={"blob": "x" * 2_000_000}):
        pass
    spans = convert_request(encode_spans(tracing.spans()), Limits()).spans
    recorder, stats = Recorder(), GatewayStats()
    queue = ForwardQueue(recorder, stats, max_spans=100, max_batch_bytes=1 << 20)
    for span in spans:
        queue.on_end(span)
    assert queue.close(5.0)
    assert sum(len(b) for b in recorder.batches) == 10
    assert max(encode_batch(b).ByteSize() for b in recorder.batches) <= 1 << 20
    assert len(recorder.batches) >= 4  # 3 spans of 300 kB fit in 1 MiB, not 4
    assert stats.spans_dropped == {"span_too_large": 1}


def test_an_idle_worker_keeps_no_span_it_forwarded() -> None:
    exporter = WatchingExporter()
    queue = ForwardQueue(exporter, GatewayStats(), workers=1)
    provider = TracerProvider()  # InMemoryTracing would keep the spans itself
    provider.add_span_processor(queue)
    for i in range(2):
        plain_request(provider.get_tracer("test"), i)
    assert queue.force_flush(5_000)
    assert len(exporter.refs) == 4
    # Released once exported; the deadline only bounds a failing run.
    deadline = time.monotonic() + 10.0
    while alive(exporter.refs) and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert alive(exporter.refs) == []
    assert queue.close(5.0)
