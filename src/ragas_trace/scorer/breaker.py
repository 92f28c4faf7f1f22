"""A circuit breaker for the judge: after N consecutive failures it opens and the
scorer stops calling the judge; after ``reset_s`` one probe is let through
(half-open); its success closes the breaker, its failure re-opens it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Thread-safe; ``allow()`` before a judge call, ``record(ok)`` after it."""

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

    def allow(self) -> bool:
        """Whether a judge call may start now; in half-open, only one probe at a time."""
        with self._lock:
            if self._state is BreakerState.CLOSED:
                return True
            if self._state is BreakerState.OPEN:
                if self._clock() - self._opened_at < self._reset_s:
                    return False
                self._state = BreakerState.HALF_OPEN
            if self._probe_in_flight:
                return False
            self._probe_in_flight = True
            return True

    def record(self, ok: bool) -> None:
        with self._lock:
            probe = self._state is BreakerState.HALF_OPEN
            if probe:
                self._probe_in_flight = False
            if ok:
                self._consecutive = 0
                self._state = BreakerState.CLOSED
                return
            self._consecutive += 1
            if probe or self._consecutive >= self._threshold:
                self._state = BreakerState.OPEN
                self._opened_at = self._clock()
