from __future__ import annotations

import pytest

from ragas_trace.scorer.breaker import BreakerState, CircuitBreaker, Permit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_only():
    breaker = CircuitBreaker(failures=3, reset_s=10, clock=Clock())
    for ok in (False, False, True, False, False):
        assert breaker.acquire() is Permit.NORMAL
        breaker.record(ok)
    assert breaker.state is BreakerState.CLOSED
    breaker.record(False)
    assert breaker.state is BreakerState.OPEN
    assert breaker.acquire() is None


def test_half_open_probe_then_recovery():
    clock = Clock()
    breaker = CircuitBreaker(failures=1, reset_s=10, clock=clock)
    breaker.record(False)
    assert breaker.acquire() is None
    clock.now = 10
    assert breaker.acquire() is Permit.PROBE
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.acquire() is None  # one probe at a time
    breaker.record(True, Permit.PROBE)
    assert breaker.state is BreakerState.CLOSED
    assert breaker.acquire() is Permit.NORMAL


def test_failed_probe_reopens_for_another_period():
    clock = Clock()
    breaker = CircuitBreaker(failures=2, reset_s=5, clock=clock)
    breaker.record(False)
    breaker.record(False)
    clock.now = 5
    assert breaker.acquire() is Permit.PROBE
    breaker.record(False, Permit.PROBE)
    assert breaker.state is BreakerState.OPEN
    clock.now = 9
    assert breaker.acquire() is None
    clock.now = 10
    assert breaker.acquire() is Permit.PROBE


def test_a_straggler_does_not_end_the_probe():
    clock = Clock()
    breaker = CircuitBreaker(failures=1, reset_s=5, clock=clock)
    breaker.record(False)
    clock.now = 5
    assert breaker.acquire() is Permit.PROBE
    breaker.record(True)  # a call admitted before the breaker opened
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.acquire() is None  # the probe is still out
    breaker.record(True, Permit.PROBE)
    assert breaker.state is BreakerState.CLOSED


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        CircuitBreaker(failures=0)
    with pytest.raises(ValueError):
        CircuitBreaker(reset_s=0)
