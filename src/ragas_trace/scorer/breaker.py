"""A circuit breaker for the judge: after N consecutive failures it opens and the
scorer stops calling the judge; after ``reset_s`` one probe is let through
(half-open); the probe's success closes the breaker, its failure re-opens it.
Calls that started before the breaker opened do not count as probes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import Enum, StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class Permit(Enum):
    NORMAL = "normal"
    PROBE = "probe"


class CircuitBreaker:
    """Thread-safe; ``acquire()`` before a judge call, ``record(ok, permit)`` after it."""

    def __init__(self, failures: int = 5, reset_s: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if failures < 1:
            raise ValueError(f"failures must be >= 1, got {failures!r}")
        if reset_s <= 0:
            raise ValueError(f"reset_s must be > 0, got {reset_s!r}")
        self._threshold = failures
        self._reset_s = reset_s
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._probe_in_flight = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state

    def acquire(self) -> Permit | None:
        """A permit for one judge call now, or ``None``; in half-open, one probe at a time."""
        with self._lock:
            if self._state is BreakerState.CLOSED:
                return Permit.NORMAL
            if self._state is BreakerState.OPEN:
                if self._clock() - self._opened_at < self._reset_s:
                    return None
                self._state = BreakerState.HALF_OPEN
            if self._probe_in_flight:
                return None
            self._probe_in_flight = True
            return Permit.PROBE

    def record(self, ok: bool, permit: Permit = Permit.NORMAL) -> None:
        with self._lock:
            if permit is Permit.PROBE:
                self._probe_in_flight = False
                if ok:
                    self._consecutive = 0
                    self._state = BreakerState.CLOSED
                else:
                    self._open()
                return
            if ok:
                self._consecutive = 0
                return
            self._consecutive += 1
            if self._state is BreakerState.CLOSED and self._consecutive >= self._threshold:
                self._open()

    def _open(self) -> None:
        self._state = BreakerState.OPEN
        self._opened_at = self._clock()
