"""Forwarding every span to the next OTLP hop: an official SDK exporter behind a
bounded queue, a few worker threads, retry with backoff while downstream is down.
A batch the next hop refuses for good (the exporters of ``downstream`` tell, from
the OTLP status) is dropped at once, not retried; refused for its size, it is
halved first, down to single spans, so only what the next hop cannot take is lost.
Any other failed batch is retried until ``retry_for_s``.

Batches are bounded in bytes (``max_batch_bytes``, below the next hop's message
limit) as well as in spans: a received request larger than that is split into its
spans, and a single span larger than that is dropped and counted
(``span_too_large``); the content policy's truncation, when scoring, applies before.

The queue is the gateway's back-pressure point: receivers ask ``admits(n, nbytes)``
before accepting a request and answer with an OTLP retryable error when it says no,
so a dead downstream makes senders wait instead of this process growing. Its
capacity is in spans (``max_spans``) and in bytes (``max_bytes``). Spans the gateway
produces itself (scored roots, evaluation spans) may use the last tenth of the queue
that receivers can't; beyond the hard capacity they are dropped and counted, as are
batches still failing after ``retry_for_s``."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.gateway.convert import RequestSpans
from ragas_trace.gateway.sizes import origin_bytes, origin_key, request_bytes, span_bytes
from ragas_trace.gateway.stats import GatewayStats

logger = logging.getLogger(__name__)

_SUPPRESS = otel_context._SUPPRESS_INSTRUMENTATION_KEY
_BACKOFF_MAX_S = 5.0
_MIB = 1 << 20
Item = ReadableSpan | RequestSpans


class ForwardQueue(SpanProcessor):
    """A ``SpanProcessor`` whose ``on_end`` queues the span for ``exporter``; received
    requests that leave unchanged can be queued whole with ``offer``.

    ``on_end`` and ``offer`` are called from receiver and scorer threads; they never
    block and never raise. Export happens on the queue's own daemon thread.
    """

    def __init__(self, exporter: SpanExporter, stats: GatewayStats, *,
                 max_spans: int = 20_000, max_batch: int = 512,
                 max_batch_bytes: int = 3 * _MIB + _MIB // 2, max_bytes: int = 256 * _MIB,
                 retry_for_s: float = 30.0, linger_s: float = 0.05, workers: int = 4) -> None:
        if max_spans < 10:
            raise ValueError(f"max_spans must be >= 10, got {max_spans}")
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self._exporter = exporter
        self._stats = stats
        self._max_spans = max_spans
        self._admit_limit = max_spans - max_spans // 10
        self._max_batch = max_batch
        self._max_batch_bytes = max_batch_bytes
        self._max_bytes = max_bytes
        self._admit_bytes = max_bytes - max_bytes // 10
        self._retry_for_s = retry_for_s
        self._linger_s = linger_s
        # Single spans, or whole requests (``RequestSpans``) exported as one batch,
        # each with its size in bytes.
        self._queue: deque[tuple[Item, int]] = deque()
        self._queued = 0
        self._in_flight = 0
        self._bytes = 0  # queued or in flight
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._full_logged = False
        # Several export calls in flight, so one slow round trip does not stall the rest.
        self._workers = [threading.Thread(target=self._run, name=f"ragas-gateway-forward-{i}",
                                          daemon=True) for i in range(workers)]
        for worker in self._workers:
            worker.start()

    def pending(self) -> int:
        """Spans queued or being exported."""
        with self._lock:
            return self._queued + self._in_flight

    @property
    def admit_capacity(self) -> tuple[int, int]:
        """Spans and bytes a receiver may accept into an empty queue."""
        return self._admit_limit, self._admit_bytes

    def admits(self, n: int, nbytes: int = 0) -> bool:
        """Whether a receiver may accept ``n`` more spans (``nbytes`` bytes) now."""
        with self._lock:
            return self._queued + self._in_flight + n <= self._admit_limit and \
                self._bytes + nbytes <= self._admit_bytes

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return

    def on_end(self, span: ReadableSpan) -> None:
        self._put_span(span)

    def offer(self, spans: Sequence[ReadableSpan]) -> None:
        """Queue received spans in one go (the receivers checked ``admits`` first);
        a ``RequestSpans`` within ``max_batch_bytes`` stays one item and leaves as
        one export call, a larger one is split into its spans."""
        if isinstance(spans, RequestSpans):
            size = request_bytes(spans)
            if size <= self._max_batch_bytes:
                self._put(spans, len(spans), size)
                return
        for span in spans:
            self._put_span(span)

    def _put_span(self, span: ReadableSpan) -> None:
        size = span_bytes(span)
        if size + origin_bytes(span) > self._max_batch_bytes:
            self._stats.dropped("span_too_large")
            logger.warning("dropped a span of %d bytes: larger than a forward batch may "
                           "be (%d bytes, --forward-max-batch-bytes)", size,
                           self._max_batch_bytes)
            return
        self._put(span, 1, size)

    def _put(self, item: Item, n: int, size: int) -> None:
        with self._lock:
            if self._queued + self._in_flight + n > self._max_spans or \
                    self._bytes + size > self._max_bytes or self._stopping.is_set():
                first = not self._full_logged
                self._full_logged = True
            else:
                self._queue.append((item, size))
                self._queued += n
                self._bytes += size
                if len(self._queue) == 1 or self._queued >= self._max_batch:
                    self._wake.notify()
                return
        self._stats.dropped("forward_queue_full", n)
        if first:
            logger.warning("forward queue full (%d spans): dropping spans (counted in "
                           "ragas_gateway_spans_dropped_total)", self._max_spans)

    def _take_batch(self) -> tuple[Sequence[ReadableSpan], int]:
        """Under the lock: a whole request alone, or up to ``max_batch`` single spans
        within ``max_batch_bytes``; with the bytes they hold."""
        head, size = self._queue[0]
        if isinstance(head, RequestSpans):
            self._queue.popleft()
            return head, size
        batch: list[ReadableSpan] = []
        held = total = 0
        origins: set[int] = set()
        while self._queue and len(batch) < self._max_batch:
            item, size = self._queue[0]
            if isinstance(item, RequestSpans):
                break
            key = origin_key(item)
            extra = size if key is None or key in origins else size + origin_bytes(item)
            if batch and total + extra > self._max_batch_bytes:
                break
            if key is not None:
                origins.add(key)
            batch.append(item)
            held += size
            total += extra
            self._queue.popleft()
        return batch, held

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping.is_set():
                    self._idle.notify_all()
                    self._wake.wait()
                if self._queued < self._max_batch and not self._stopping.is_set() and \
                        not isinstance(self._queue[0][0] if self._queue else None,
                                       RequestSpans):
                    # Let a few more spans arrive so batches are not one span each
                    # (a whole request is a batch already).
                    self._wake.wait(self._linger_s)
                if not self._queue:
                    self._idle.notify_all()
                    if self._stopping.is_set():
                        return
                    continue
                batch, size = self._take_batch()
                self._queued -= len(batch)
                self._in_flight += len(batch)
                if self._queue:
                    self._wake.notify()
            try:
                self._export_with_retry(batch)
            finally:
                with self._lock:
                    self._in_flight -= len(batch)
                    self._bytes -= size
                    self._full_logged = False
                    if not self._queue:
                        self._idle.notify_all()
            # Not kept through the next wait: a forwarded request (up to MiBs) would
            # stay alive as long as this worker is idle.
            del batch

    def _export_with_retry(self, batch: Sequence[ReadableSpan]) -> None:
        give_up = time.monotonic() + self._retry_for_s
        backoff = 0.1
        token = otel_context.attach(otel_context.set_value(_SUPPRESS, True))
        try:
            while True:
                try:
                    ok = self._exporter.export(batch) is SpanExportResult.SUCCESS
                except Exception as exc:
                    # Once stopping, ``close`` may have shut the exporter (its channel)
                    # under this call: expected, and the batch is counted below.
                    # Otherwise it is the exporter's own bug: count, don't die.
                    if not self._stopping.is_set():
                        record_internal_error("gateway.forward.export", exc)
                    ok = False
                if ok:
                    self._stats.forwarded(len(batch))
                    return
                refused = self._refused()
                if refused is not None and _for_size(refused) and len(batch) > 1:
                    # The next hop's limit is below ours: halve the batch, so the
                    # spans that fit are not lost with the one that does not.
                    half = len(batch) // 2
                    spans = list(batch)
                    self._export_with_retry(spans[:half])
                    self._export_with_retry(spans[half:])
                    return
                if refused is not None:
                    self._stats.dropped("downstream_refused", len(batch))
                    logger.warning("dropped %d spans: downstream refused them (%s)",
                                   len(batch), refused[:200])
                    return
                if time.monotonic() + backoff > give_up or self._stopping.is_set():
                    self._stats.dropped("downstream_unavailable", len(batch))
                    logger.warning("dropped %d spans: downstream still failing after "
                                   "%.1f s", len(batch), self._retry_for_s)
                    return
                self._stats.retried()
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
        finally:
            otel_context.detach(token)

    def _refused(self) -> str | None:
        """Why downstream refused the last export for good, if the exporter can tell
        (``downstream``'s gRPC exporter can); else every failure is retried."""
        refused = getattr(self._exporter, "refused", None)
        return refused() if callable(refused) else None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        with self._lock:
            self._wake.notify()
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(min(remaining, 0.1))
                self._wake.notify()
        return True

    def shutdown(self) -> None:
        self.close()

    def close(self, timeout_s: float = 10.0) -> bool:
        """Export what is queued (within ``timeout_s``), then shut the exporter down.
        Returns whether nothing was left behind; safe to call twice."""
        if self._stopping.is_set():
            return True
        done = self.force_flush(int(timeout_s * 1000))
        self._stopping.set()
        with self._lock:
            self._wake.notify_all()
        deadline = time.monotonic() + max(0.1, timeout_s)
        for worker in self._workers:
            worker.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            left = self._queued
            self._queue.clear()
            self._queued = 0
            self._bytes = 0
        if left:
            self._stats.dropped("shutdown", left)
        try:
            self._exporter.shutdown()
        except Exception as exc:
            record_internal_error("gateway.forward.shutdown", exc)
        return done and left == 0


def _for_size(refusal: str) -> bool:
    """Whether the next hop refused an export for its size (``downstream``'s wording)."""
    return refusal.startswith(("RESOURCE_EXHAUSTED", "HTTP 413"))
