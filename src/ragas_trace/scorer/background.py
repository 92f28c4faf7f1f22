"""The background scorer: its own asyncio event loop in a daemon thread, so sync
and async apps alike hand records over without waiting.

``submit`` never blocks the caller: it appends the record to a bounded inbox
under a lock and returns; when the queue is full it returns ``False`` and the
caller records the drop. The loop collects the inbox every ``POLL_S`` while it
has work, and is woken (one cross-thread call) only when it was idle: waking it
on every submit would hand the GIL to the scorer thread in the middle of the
app's request, which measurably slowed requests down.

At most ``concurrency`` records are with the judge at once, each under a
per-record timeout, behind a circuit breaker. Retries of individual HTTP calls
are the judge's business (the OpenAI judge retries 429s and 5xx with backoff);
the scorer does not retry a whole record, which would multiply the judge's cost
exactly when it is struggling.

Everything on the loop runs in a context with OpenTelemetry's
suppress-instrumentation key set, so the judge's own calls are never traced."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable

from opentelemetry import context as otel_context

from ragas_trace import _thread_signals
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.judges.base import Judge
from ragas_trace.record import RagRecord
from ragas_trace.results import ALL_METRICS, Metric
from ragas_trace.scorer.breaker import CircuitBreaker
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome, is_judge_failure, outcome_of

logger = logging.getLogger("ragas_trace")

Done = Callable[[RagRecord | None, Outcome], None]
# A record, or a function building it: the processor hands over the extraction so
# that it runs on the scorer thread, not in the app's request.
RecordSource = RagRecord | Callable[[], RagRecord | None]
POLL_S = 0.01


class BackgroundScorer:
    """Scores ``RagRecord``s with ``judge`` off the caller's thread.

    ``done(record, outcome)`` is called on the scorer thread exactly once for every
    accepted record, with status ``dropped`` / reason ``shutdown`` if shutdown
    cancels it (``record`` is ``None`` when a record function gave none); it must
    be quick and must not block.
    """

    def __init__(
        self,
        judge: Judge,
        *,
        concurrency: int = 8,
        queue_size: int = 1000,
        timeout_s: float = 30.0,
        breaker: CircuitBreaker | None = None,
        metrics: frozenset[Metric] = ALL_METRICS,
        close_judge: bool = True,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        if queue_size < 1:
            raise ValueError(f"queue_size must be >= 1, got {queue_size!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self.judge = judge
        self.concurrency = concurrency
        self.queue_size = queue_size
        self.timeout_s = timeout_s
        self.breaker = breaker or CircuitBreaker()
        self._metrics = metrics
        self._close_judge = close_judge
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self._reset_runtime()
        _after_fork_scorers.add(self)

    def _reset_runtime(self) -> None:
        self._pid = os.getpid()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._wake: asyncio.Event | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._stopping = False  # past the shutdown deadline: what ends now is dropped
        self._sleeping = False  # the loop waits for a wake-up, not polling
        self._inbox: deque[tuple[RecordSource, Done]] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending = 0  # accepted and not yet done
        self._running = 0  # with the judge now

    @property
    def judge_name(self) -> str:
        try:
            return str(self.judge.name)
        except Exception:
            return type(self.judge).__name__

    @property
    def queued(self) -> int:
        """Records waiting for a judge slot."""
        with self._lock:
            return self._pending - self._running

    @property
    def closed(self) -> bool:
        """Whether ``shutdown`` was called (``submit`` refuses from then on)."""
        with self._lock:
            return self._closed

    @property
    def pending(self) -> int:
        """Records accepted and not yet done (waiting or with the judge)."""
        with self._lock:
            return self._pending

    def submit(self, record: RecordSource, done: Done) -> bool:
        """Queue ``record``; ``False`` (and no ``done`` call) when full or shut down."""
        with self._lock:
            if self._closed:
                return False
            loop = self._ensure_loop_locked()
            if self._pending - self._running >= self.queue_size:
                return False
            self._pending += 1
            self._inbox.append((record, done))
            wake, self._sleeping = self._sleeping, False
        if wake and self._wake is not None:
            try:
                loop.call_soon_threadsafe(self._wake.set)
            except RuntimeError:  # the loop closed under us; shutdown reports the rest
                pass
        return True

    def drain(self, timeout_s: float) -> bool:
        """Wait until every accepted record is done; ``False`` if the deadline came first."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._idle:
            while self._pending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Stop accepting, drain within ``timeout_s``, cancel what is left (its ``done``
        gets ``dropped``/``shutdown``), close the judge. Safe to call twice; a second
        call while the first drains waits for the drain too (a SIGTERM that comes while
        the exit path drains must not cut it short)."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._lock:
            already = self._closed
            self._closed = True
        if already:
            return self.drain(timeout_s)
        drained = self.drain(deadline - time.monotonic())
        with self._lock:
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return drained
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), loop)
        except RuntimeError:
            return False
        # A moment at least for the cancelled records' ``done`` calls (dropped/shutdown).
        thread.join(max(0.05, deadline - time.monotonic()))
        return drained and not thread.is_alive()

    # -- the loop thread ------------------------------------------------------------

    def _ensure_loop_locked(self) -> asyncio.AbstractEventLoop:
        if self._pid != os.getpid():
            self._reset_runtime()
        if self._loop is None:
            ready = threading.Event()
            loop = asyncio.new_event_loop()
            self._loop = loop
            self._thread = threading.Thread(target=self._run_loop, args=(loop, ready),
                                            name="ragas-trace-scorer", daemon=True)
            _thread_signals.start(self._thread)
            ready.wait()
        return self._loop

    def _run_loop(self, loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        otel_context.attach(otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY,
                                                   True))
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._wake = asyncio.Event()
        # The pump inherits the suppressed context, and so do the tasks it starts.
        self._pump_task = loop.create_task(self._pump())
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _pump(self) -> None:
        """Start a task per record in the inbox; poll while busy, sleep when idle."""
        wake = self._wake
        if wake is None:
            raise RuntimeError("scorer loop not initialised")
        while True:
            if self._start_inbox(wake):
                await wake.wait()
            else:
                await asyncio.sleep(POLL_S)

    def _start_inbox(self, wake: asyncio.Event) -> bool:
        """Loop thread: a task for each record in the inbox; whether the scorer is idle.
        A function of its own so that no local of the pump's keeps the last record (its
        spans, passages and answer) alive while it sleeps."""
        loop = asyncio.get_running_loop()
        with self._lock:
            batch = list(self._inbox)
            self._inbox.clear()
            idle = not batch and self._pending == 0
            if idle:
                self._sleeping = True
                wake.clear()
        for record, done in batch:
            task = loop.create_task(self._score(record, done))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return idle

    async def _score(self, source: RecordSource, done: Done) -> None:
        outcome = Outcome(EvaluationStatus.DROPPED, reason="shutdown")
        record: RagRecord | None = None
        try:
            record = source if isinstance(source, RagRecord) else source()
            if record is None:
                outcome = Outcome(EvaluationStatus.UNSCORABLE, reason="no_record")
                return
            if self._semaphore is None:
                raise RuntimeError("scorer loop not initialised")
            async with self._semaphore:
                with self._lock:
                    self._running += 1
                try:
                    outcome = await self._evaluate(record)
                finally:
                    with self._lock:
                        self._running -= 1
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            outcome = Outcome(EvaluationStatus.FAILED, reason="internal_error")
            record_internal_error("scorer.record", exc)
        finally:
            if self._stopping:
                # Cancelled at the deadline; a judge that turned the cancellation (or
                # the interpreter's shutdown) into an answer must not override that.
                outcome = Outcome(EvaluationStatus.DROPPED, reason="shutdown")
            try:
                done(record, outcome)
            except Exception as exc:
                record_internal_error("scorer.done", exc)
            finally:
                self._finish_one()

    async def _evaluate(self, record: RagRecord) -> Outcome:
        permit = self.breaker.acquire()
        if permit is None:
            return Outcome(EvaluationStatus.FAILED, reason="circuit_open")
        start = time.perf_counter()
        try:
            scores = await asyncio.wait_for(
                self.judge.evaluate(record.question, record.context_texts, record.answer,
                                    self._metrics),
                self.timeout_s)
        except TimeoutError:
            outcome = Outcome(EvaluationStatus.TIMEOUT, reason="score_timeout",
                              duration_s=time.perf_counter() - start)
        except Exception as exc:  # the Judge protocol forbids raising; defend anyway
            logger.warning("judge %s raised %s", self.judge_name, type(exc).__name__)
            outcome = Outcome(EvaluationStatus.FAILED, reason=type(exc).__name__,
                              duration_s=time.perf_counter() - start)
        else:
            outcome = outcome_of(scores, time.perf_counter() - start)
        self.breaker.record(not is_judge_failure(outcome), permit)
        return outcome

    async def _stop(self) -> None:
        self._stopping = True
        with self._lock:
            leftovers = list(self._inbox)
            self._inbox.clear()
        for record, done in leftovers:
            self._tasks.add(asyncio.get_running_loop().create_task(self._score(record, done)))
        tasks = [*self._tasks, *([self._pump_task] if self._pump_task else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._close_judge:
            try:
                await asyncio.wait_for(self.judge.aclose(), 2.0)
            except Exception as exc:
                logger.warning("closing judge %s failed: %s", self.judge_name,
                               type(exc).__name__)
        asyncio.get_running_loop().stop()

    def _finish_one(self) -> None:
        with self._idle:
            self._pending -= 1
            if not self._pending:
                self._idle.notify_all()


_after_fork_scorers: weakref.WeakSet[BackgroundScorer] = weakref.WeakSet()


def _reinit_after_fork() -> None:
    # The parent's loop thread does not exist in the child: start afresh on next submit.
    for scorer in list(_after_fork_scorers):
        scorer._lock = threading.Lock()
        scorer._idle = threading.Condition(scorer._lock)
        scorer._reset_runtime()


os.register_at_fork(after_in_child=_reinit_after_fork)
