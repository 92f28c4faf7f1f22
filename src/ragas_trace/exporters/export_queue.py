"""``ExportQueue``: the batching span processor in front of a ``SpanExporter`` we were
given, in place of the SDK's ``BatchSpanProcessor``, for two things that one does
not do: ``force_flush`` honours its timeout, and every span that does not reach
the backend is counted by reason (``queue_full``: the bounded queue was full;
``export_failed``: the exporter said so or raised; ``shutdown``: still queued or
in flight when the shutdown deadline came), reported through ``on_lost`` (the
``ragas.export.lost`` metric) and logged with the count.

Sizes: a batch larger than the queue (``OTEL_BSP_MAX_QUEUE_SIZE=200`` with the
default batch of 512, which the SDK's processor refuses) is lowered to the queue
size, with a warning; the worker exports as soon as the queue holds a batch or is
half full, whichever comes first, so that spans keep arriving while a batch is in
flight. Before, such a queue filled and refused spans until the next scheduled
export: 2,314 of 3,600 spans lost with a healthy backend.

Threads: ``on_end`` runs on the app's (or the scorer's) threads and only appends
under a lock; one daemon worker exports batches; ``force_flush`` and
``shutdown`` wait for it until their deadline. At the shutdown deadline the
exporter is shut down, which ends an OTLP exporter's retries of a dead endpoint."""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import Counter, deque
from collections.abc import Callable, Sequence

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace import _thread_signals
from ragas_trace._deadline import call_within, remaining
from ragas_trace._settings import Setting, integer, number, resolve

logger = logging.getLogger("ragas_trace")

OnLost = Callable[[int, str], None]
# Spans that left (True: the exporter took them) or never will (False).
OnSettled = Callable[[Sequence[ReadableSpan], bool], None]
Spill = Callable[[Sequence[ReadableSpan]], int]
LOST_REASONS = ("queue_full", "export_failed", "shutdown")
# The loss warnings, by template: a command that counts its deliveries itself (the
# demo) folds them into its own report.
LOST_MESSAGE = "ragas-trace: %d span(s) not exported (%s); counted in ragas_export_lost_total"
LOST_FOUND_MESSAGE = "ragas-trace: %d span(s) not exported, found by %s (total by reason: %s)"
# The SDK's BatchSpanProcessor settings, read from the same environment variables.
_MAX_QUEUE = Setting("max_queue_size", "OTEL_BSP_MAX_QUEUE_SIZE", 2048, integer(1),
                     "spans waiting for export")
_MAX_BATCH = Setting("max_export_batch_size", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512,
                     integer(1), "spans per export call")
_DELAY_MS = Setting("schedule_delay_millis", "OTEL_BSP_SCHEDULE_DELAY", 5000.0,
                    number(0.0, above=True), "longest wait between exports")


class ExportQueue(SpanProcessor):
    """Bounded queue + one worker exporting batches of at most ``max_batch_size``
    every ``schedule_delay_s`` (sooner when a batch is full, the queue half full, or a
    flush asks)."""

    def __init__(self, exporter: SpanExporter, *, max_queue_size: int | None = None,
                 max_batch_size: int | None = None, schedule_delay_s: float | None = None,
                 on_lost: OnLost | None = None, on_settled: OnSettled | None = None,
                 spill: Spill | None = None) -> None:
        """Unset sizes and delay come from ``OTEL_BSP_*`` as the SDK's processor reads
        them, else its defaults (2048, 512, 5 s); a bad argument raises ``ValueError``.
        ``spill``: where the spans still queued at the shutdown deadline go (the
        spool); it returns how many it kept (the first ones), the rest are lost."""
        self.exporter = exporter
        self._max_queue: int = resolve(_MAX_QUEUE, max_queue_size, os.environ)
        self._max_batch: int = resolve(_MAX_BATCH, max_batch_size, os.environ)
        delay_ms = None if schedule_delay_s is None else schedule_delay_s * 1000
        self._delay_s: float = resolve(_DELAY_MS, delay_ms, os.environ) / 1000
        if self._max_batch > self._max_queue:
            logger.warning("ragas-trace: export batch size %d (%s) is larger than the "
                           "export queue %d (%s); batches of %d are exported",
                           self._max_batch, _MAX_BATCH.env, self._max_queue, _MAX_QUEUE.env,
                           self._max_queue)
            self._max_batch = self._max_queue
        self._export_at = max(1, min(self._max_batch, self._max_queue // 2))
        self._on_lost = on_lost
        self._on_settled = on_settled
        self._spill = spill
        self.delivered = 0
        self.lost: Counter[str] = Counter()
        self._reported = 0  # losses already reported by a flush or shutdown
        self._warned: set[str] = set()
        self._reset_runtime()
        _queues.add(self)

    def _reset_runtime(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)  # the worker waits on it
        self._idle = threading.Condition(self._lock)  # flushes wait on it
        self._queue: deque[ReadableSpan] = deque()
        self._in_flight = 0
        self._flushing = False
        self._closed = False
        self._aborted = False
        self._worker = threading.Thread(target=self._work, name="ragas-trace-export",
                                        daemon=True)
        _thread_signals.start(self._worker)

    # -- SpanProcessor ---------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            refused = ("shutdown" if self._closed
                       else "queue_full" if len(self._queue) >= self._max_queue else None)
            if refused is None:
                self._queue.append(span)
                if len(self._queue) >= self._export_at:
                    self._wake.notify()
        if refused is not None:
            self._count_lost(1, refused)
            self._settle([span], False)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued; ``False`` if the deadline came first or a span was
        lost since the previous flush (a periodic flush is a health check)."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000.0
        with self._lock:
            self._flushing = True
            self._wake.notify()
            done = self._wait_idle(deadline)
        return not self._report("flush") and done

    def shutdown(self, timeout_millis: int = 30000) -> bool:  # type: ignore[override]
        """Export what is queued until the deadline, then count the rest as lost and
        shut the exporter down. Safe twice. The final account: ``False`` when any span
        was lost in the queue's life, even one an earlier flush already reported."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000.0
        with self._lock:
            if self._closed:
                return True
            self._closed = True
            self._wake.notify()
            done = self._wait_idle(deadline)
            cleared: list[ReadableSpan] = []
            if not done:
                self._aborted = True
                cleared = list(self._queue)
                self._queue.clear()
        kept = 0
        if cleared and self._spill is not None:
            try:
                kept = self._spill(cleared)
            except Exception as exc:  # the spool never raises; a bug of ours must not either
                logger.warning("ragas-trace: spooling spans failed: %s", exc)
        self._count_lost(len(cleared) - kept, "shutdown")
        self._settle(cleared[kept:], False)
        # At the deadline this cuts an exporter's retries short; its batch in flight
        # then fails and is counted as lost to the shutdown.
        call_within(self.exporter.shutdown, max(0.05, remaining(deadline)), "exporter shutdown")
        self._worker.join(min(0.1, remaining(deadline)))
        self._report("shutdown")
        with self._lock:
            lost = sum(self.lost.values())
        return not lost and done

    # -- internals -------------------------------------------------------------------

    def _wait_idle(self, deadline: float) -> bool:
        """Under the lock: wait until nothing is queued or in flight."""
        while self._queue or self._in_flight:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._idle.wait(left)
        return True

    def _work(self) -> None:
        otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY,
                                                   True))
        while True:
            with self._lock:
                if not (self._closed or self._flushing or len(self._queue) >= self._export_at):
                    self._wake.wait(self._delay_s)
                if self._aborted or (self._closed and not self._queue):
                    self._idle.notify_all()
                    return
                count = min(self._max_batch, len(self._queue))
                batch = [self._queue.popleft() for _ in range(count)]
                self._in_flight = count
                if not batch:
                    self._flushing = False
                    self._idle.notify_all()
                    continue
            self._export(batch)
            # Not kept through the next wait: the spans (passages, answers) of requests
            # long done would stay alive as long as the app is idle.
            del batch
            with self._lock:
                self._in_flight = 0
                if not self._queue:
                    self._flushing = False
                    self._idle.notify_all()

    def _export(self, batch: list[ReadableSpan]) -> None:
        try:
            ok = self.exporter.export(batch) is SpanExportResult.SUCCESS
        except Exception as exc:
            logger.warning("ragas-trace: span exporter %s raised %s",
                           type(self.exporter).__name__, type(exc).__name__)
            ok = False
        if ok:
            with self._lock:
                self.delivered += len(batch)
        else:
            self._count_lost(len(batch), "shutdown" if self._aborted else "export_failed")
        self._settle(batch, ok)

    def _settle(self, spans: Sequence[ReadableSpan], exported: bool) -> None:
        if self._on_settled is None or not spans:
            return
        try:
            self._on_settled(spans, exported)
        except Exception as exc:
            logger.warning("ragas-trace: after-export hook failed: %s", exc)

    def _count_lost(self, count: int, reason: str) -> None:
        if count <= 0:
            return
        with self._lock:
            self.lost[reason] += count
            first = reason not in self._warned
            self._warned.add(reason)
        if first:
            logger.warning(LOST_MESSAGE, count, reason)
        if self._on_lost is not None:
            try:
                self._on_lost(count, reason)
            except Exception as exc:
                logger.warning("ragas-trace: counting lost spans failed: %s", exc)

    def _report(self, when: str) -> int:
        """Log the losses since the last report; their count."""
        with self._lock:
            total = sum(self.lost.values())
            new, self._reported = total - self._reported, total
            by_reason = ", ".join(f"{r} {n}" for r, n in sorted(self.lost.items()))
        if new:
            logger.warning(LOST_FOUND_MESSAGE, new, when, by_reason)
        return new


_queues: weakref.WeakSet[ExportQueue] = weakref.WeakSet()


def _reinit_after_fork() -> None:
    # The worker thread does not survive fork; what the parent queued is the parent's.
    for queue in list(_queues):
        if not queue._closed:
            queue._reset_runtime()


os.register_at_fork(after_in_child=_reinit_after_fork)
