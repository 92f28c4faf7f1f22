"""``AnnotationQueue``: a bounded queue and one daemon worker that sends annotations
to one backend in batches, retrying what failed, with backoff, for a bounded time.

``offer`` runs on the scorer's thread and never blocks: when the queue is full the
annotations are lost and counted. Backends confirm each annotation (Phoenix's
synchronous mode answers once it is in its database; Langfuse answers per item):
every annotation ends up counted once in ``ragas.annotations`` as ``stored``
(confirmed), ``refused`` (the backend said no: bad request, auth) or ``lost``
(queue full, still failing after ``retry_for_s``, still queued at the shutdown
deadline, or its span never exported); each re-send is also counted as
``retried``."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from opentelemetry import context as otel_context

from ragas_trace import _thread_signals
from ragas_trace.exporters.annotations.scores import ScoreAnnotation
from ragas_trace.exporters.metrics import ScorerMetrics

logger = logging.getLogger("ragas_trace")

_SUPPRESS = otel_context._SUPPRESS_INSTRUMENTATION_KEY
_FIRST_BACKOFF_S = 0.5
_MAX_BACKOFF_S = 5.0


STORED, RETRIED, REFUSED, LOST = "stored", "retried", "refused", "lost"
# Where what is left at the shutdown deadline goes (the spool): (sink, items) -> kept.
Spill = Callable[[str, Sequence[ScoreAnnotation]], int]


class SendError(Exception):
    """A batch the backend did not take; ``retry`` when trying again may help
    (network error, 5xx, 429, Phoenix not knowing the span yet). ``status`` and
    ``detail``: the HTTP status and reply of an HTTP error."""

    def __init__(self, message: str, *, retry: bool, status: int | None = None,
                 detail: str = "") -> None:
        super().__init__(message)
        self.retry = retry
        self.status = status
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ItemFailure:
    """One annotation of a batch the backend did not confirm."""

    annotation: ScoreAnnotation
    message: str
    retry: bool


class AnnotationBackend(Protocol):
    """Writes annotations somewhere. ``name`` is the ``sink`` metric label."""

    @property
    def name(self) -> str: ...

    def keep(self, annotation: ScoreAnnotation) -> bool:
        """Whether this backend writes ``annotation`` at all."""
        ...

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float
             ) -> Sequence[ItemFailure]:
        """Deliver ``batch`` within ``timeout_s``: the annotations the backend did not
        confirm (the rest it stored), or ``SendError`` when it took none."""
        ...


class AnnotationQueue:
    def __init__(self, backend: AnnotationBackend, metrics: ScorerMetrics, *,
                 max_queued: int = 10_000, max_batch: int = 100, retry_for_s: float = 30.0,
                 request_timeout_s: float = 10.0) -> None:
        if max_queued < 1 or max_batch < 1:
            raise ValueError("max_queued and max_batch must be >= 1")
        self.backend = backend
        self._metrics = metrics
        self._max_queued = max_queued
        self._max_batch = max_batch
        self._retry_for_s = retry_for_s
        self._request_timeout_s = request_timeout_s
        self._warned: set[str] = set()
        self._init_state()

    def _init_state(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[ScoreAnnotation] = deque()
        self._in_flight = 0
        self._batch: list[ScoreAnnotation] = []  # the one being sent
        self._closed = False
        self._abandoned = False  # join took the batch in flight: its outcome is not ours
        self._parked = False  # the deadline came: the rest is left for join's spill
        self._spill: Spill | None = None
        self._deadline = float("inf")
        self._worker = threading.Thread(target=self._run, daemon=True,
                                        name=f"ragas-trace-annotations-{self.backend.name}")
        self._started = False

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue) + self._in_flight

    def offer(self, annotations: Sequence[ScoreAnnotation]) -> None:
        if not annotations:
            return
        if os.getpid() != self._pid:  # forked: the parent's worker and queue stay there
            self._init_state()
        with self._lock:
            room = 0 if self._closed else self._max_queued - len(self._queue)
            taken = annotations[:max(0, room)]
            self._queue.extend(taken)
            if taken:
                if not self._started:
                    self._started = True
                    _thread_signals.start(self._worker)
                self._changed.notify_all()
        rest = annotations[len(taken):]
        if rest and self._closed and self._spill is not None:
            # Late (their span's export ended after the shutdown began): to the spool.
            rest = rest[self._spilled(rest):]
        if rest:
            self._count(LOST, len(rest), "annotation queue full" if not self._closed
                        else "annotation queue closed")

    def lost(self, n: int, why: str) -> None:
        """Count ``n`` annotations that never reached the queue."""
        self._count(LOST, n, why)

    def force_flush(self, timeout_s: float) -> bool:
        """Wait until everything offered so far was sent (or given up on)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._queue or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def close(self, deadline: float, spill: Spill | None = None) -> bool:
        """Take no more (what comes later goes to ``spill`` if given); the worker sends
        what is queued until ``deadline`` (monotonic). ``False`` if closed already."""
        with self._lock:
            if self._closed:
                return False
            self._closed = True
            self._spill = spill
            self._deadline = deadline
            self._changed.notify_all()
            return True

    def shutdown(self, timeout_s: float) -> bool:
        """Send what is queued within ``timeout_s``; what is left then is dropped."""
        deadline = time.monotonic() + timeout_s
        if not self.close(deadline):
            return True
        return self.join(deadline)

    def join(self, deadline: float) -> bool:
        """Wait for the worker until ``deadline``, then hand what is left to the spill
        given to ``close`` (the spool: it returns how many it kept), else drop (and
        count) it. A batch still in flight goes with it: to the spill (the backend may
        store it twice: it upserts by span and name), else counted lost here, now, not
        by the worker after ``shutdown`` has returned."""
        if self._started:
            self._worker.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            left = list(self._queue)
            self._queue.clear()
            if self._worker.is_alive() and self._batch:
                left.extend(self._batch)
                self._abandoned = True
            self._changed.notify_all()
        kept = self._spilled(left) if left else 0
        if len(left) > kept:
            self._count(LOST, len(left) - kept, "shutdown deadline")
        return not left and not self._worker.is_alive()

    def _spilled(self, items: Sequence[ScoreAnnotation]) -> int:
        if self._spill is None:
            return 0
        try:
            return self._spill(self.backend.name, items)
        except Exception as exc:  # the spool never raises; a bug of ours must not either
            logger.warning("ragas-trace: spooling annotations failed: %s", exc)
            return 0

    # -- worker -----------------------------------------------------------------------

    def _run(self) -> None:
        # The backend's HTTP calls must not show up in the app's own traces.
        otel_context.attach(otel_context.set_value(_SUPPRESS, True))
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._changed.wait()
                if not self._queue or self._parked:
                    return  # what is still queued is join's (for the spool)
                batch = [self._queue.popleft()
                         for _ in range(min(self._max_batch, len(self._queue)))]
                self._in_flight = len(batch)
                self._batch = batch
            try:
                self._deliver(batch)
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._batch = []
                    self._changed.notify_all()
            del batch  # not kept through the next wait, as the export queue's

    def _deliver(self, batch: list[ScoreAnnotation]) -> None:
        give_up = time.monotonic() + self._retry_for_s
        backoff = _FIRST_BACKOFF_S
        pending = batch
        while pending:
            limit = min(give_up, self._deadline)
            timeout = max(0.1, min(self._request_timeout_s, limit - time.monotonic()))
            try:
                failures = list(self.backend.send(pending, timeout))
            except SendError as exc:
                failures = [ItemFailure(a, str(exc), exc.retry) for a in pending]
            except Exception as exc:  # a backend bug must not kill the worker
                failures = [ItemFailure(a, f"{type(exc).__name__}: {exc}", False)
                            for a in pending]
            self._count(STORED, len(pending) - len(failures))
            refused = [f for f in failures if not f.retry]
            if refused:
                self._count(REFUSED, len(refused), refused[0].message)
            again = [f for f in failures if f.retry]
            if not again:
                return
            if time.monotonic() + backoff >= limit:
                if limit == self._deadline and self._closed and self._spill is not None:
                    # Cut short by the shutdown deadline: back in the queue, for ``join``
                    # to hand to the spool with the rest; this worker is done.
                    with self._lock:
                        if not self._abandoned:
                            self._queue.extendleft(reversed([f.annotation for f in again]))
                        self._parked = True
                    return
                self._count(LOST, len(again), f"still failing: {again[0].message}")
                return
            self._count(RETRIED, len(again))
            self._sleep(backoff)
            backoff = min(_MAX_BACKOFF_S, backoff * 2)
            pending = [f.annotation for f in again]

    def _sleep(self, seconds: float) -> None:
        # Woken early by shutdown, whose deadline then bounds the retries.
        with self._lock:
            self._changed.wait(seconds)

    def _count(self, outcome: str, n: int, why: str | None = None) -> None:
        if n <= 0 or (self._abandoned and threading.current_thread() is self._worker):
            return  # the batch join handed to the spool: counted where it is sent
        self._metrics.annotations(self.backend.name, outcome, n)
        if why is not None and outcome not in self._warned:
            self._warned.add(outcome)
            logger.warning("ragas-trace: %d annotation(s) for %s %s: %s (logged once; "
                           "counted in ragas.annotations)", n, self.backend.name, outcome, why)
