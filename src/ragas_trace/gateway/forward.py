"""Forwarding every span to the next OTLP hop: an official SDK exporter behind a
bounded queue, one worker thread, retry with backoff while downstream is down.

The queue is the gateway's back-pressure point: receivers ask ``admits(n)`` before
accepting a request and answer with an OTLP retryable error when it says no, so a
dead downstream makes senders wait instead of this process growing. Spans the
gateway produces itself (scored roots, evaluation spans) may use the last tenth
of the queue that receivers can't; beyond the hard capacity they are dropped and
counted, as are batches still failing after ``retry_for_s``."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.gateway.stats import GatewayStats

logger = logging.getLogger(__name__)

_SUPPRESS = otel_context._SUPPRESS_INSTRUMENTATION_KEY
_BACKOFF_MAX_S = 5.0


class ForwardQueue(SpanProcessor):
    """A ``SpanProcessor`` whose ``on_end`` queues the span for ``exporter``.

    ``on_end`` is called from receiver and scorer threads; it never blocks and never
    raises. Export happens on the queue's own daemon thread.
    """

    def __init__(self, exporter: SpanExporter, stats: GatewayStats, *,
                 max_spans: int = 20_000, max_batch: int = 512,
                 retry_for_s: float = 30.0, linger_s: float = 0.05) -> None:
        if max_spans < 10:
            raise ValueError(f"max_spans must be >= 10, got {max_spans}")
        self._exporter = exporter
        self._stats = stats
        self._max_spans = max_spans
        self._admit_limit = max_spans - max_spans // 10
        self._max_batch = max_batch
        self._retry_for_s = retry_for_s
        self._linger_s = linger_s
        self._queue: deque[ReadableSpan] = deque()
        self._in_flight = 0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._full_logged = False
        self._worker = threading.Thread(target=self._run, name="ragas-gateway-forward",
                                        daemon=True)
        self._worker.start()

    def pending(self) -> int:
        """Spans queued or being exported."""
        with self._lock:
            return len(self._queue) + self._in_flight

    def admits(self, n: int) -> bool:
        """Whether a receiver may accept ``n`` more spans now."""
        with self._lock:
            return len(self._queue) + self._in_flight + n <= self._admit_limit

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            if len(self._queue) + self._in_flight >= self._max_spans or \
                    self._stopping.is_set():
                first = not self._full_logged
                self._full_logged = True
            else:
                self._queue.append(span)
                if len(self._queue) == 1 or len(self._queue) >= self._max_batch:
                    self._wake.notify()
                return
        self._stats.dropped("forward_queue_full")
        if first:
            logger.warning("forward queue full (%d spans): dropping spans (counted in "
                           "ragas_gateway_spans_dropped_total)", self._max_spans)

    def offer(self, spans: list[ReadableSpan]) -> None:
        """Queue received spans in one go (the receivers checked ``admits`` first)."""
        with self._lock:
            room = self._max_spans - len(self._queue) - self._in_flight
            if self._stopping.is_set():
                room = 0
            self._queue.extend(spans[:max(room, 0)])
            self._wake.notify()
        if len(spans) > room:
            self._stats.dropped("forward_queue_full", len(spans) - max(room, 0))

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopping.is_set():
                    self._idle.notify_all()
                    self._wake.wait()
                if len(self._queue) < self._max_batch and not self._stopping.is_set():
                    # Let a few more spans arrive so batches are not one span each.
                    self._wake.wait(self._linger_s)
                if not self._queue:
                    self._idle.notify_all()
                    if self._stopping.is_set():
                        return
                    continue
                batch = [self._queue.popleft()
                         for _ in range(min(self._max_batch, len(self._queue)))]
                self._in_flight = len(batch)
            try:
                self._export_with_retry(batch)
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._full_logged = False
                    if not self._queue:
                        self._idle.notify_all()

    def _export_with_retry(self, batch: list[ReadableSpan]) -> None:
        give_up = time.monotonic() + self._retry_for_s
        backoff = 0.1
        token = otel_context.attach(otel_context.set_value(_SUPPRESS, True))
        try:
            while True:
                try:
                    ok = self._exporter.export(batch) is SpanExportResult.SUCCESS
                except Exception as exc:  # the exporter's own bug: count, don't die
                    record_internal_error("gateway.forward.export", exc)
                    ok = False
                if ok:
                    self._stats.forwarded(len(batch))
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
            self._wake.notify()
        self._worker.join(timeout=max(0.1, timeout_s))
        with self._lock:
            left = len(self._queue)
            self._queue.clear()
        if left:
            self._stats.dropped("shutdown", left)
        try:
            self._exporter.shutdown()
        except Exception as exc:
            record_internal_error("gateway.forward.shutdown", exc)
        return done and left == 0
