from __future__ import annotations

import pytest

from ragas_trace.scorer.breaker import BreakerState, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_consecutive_failures_only():
    breaker = CircuitBreaker(failures=3, reset_s=10, clock=Clock())
    for ok in (False, False, True, False, False):
        assert breaker.allow()
        breaker.record(ok)
    assert breaker.state is BreakerState.CLOSED
    breaker.record(False)
    assert breaker.state is BreakerState.OPEN
    assert not breaker.allow()


def test_half_open_probe_then_recovery():
    clock = Clock()
    breaker = CircuitBreaker(failures=1, reset_s=10, clock=clock)
    breaker.record(False)
    assert not breaker.allow()
    clock.now = 10
    assert breaker.allow()  # the probe
    assert breaker.state is BreakerState.HALF_OPEN
    assert not breaker.allow()  # one probe at a time
    breaker.record(True)
    assert breaker.state is BreakerState.CLOSED
    assert breaker.allow()


def test_failed_probe_reopens_for_another_period():
    clock = Clock()
    breaker = CircuitBreaker(failures=2, reset_s=5, clock=clock)
    breaker.record(False)
    breaker.record(False)
    clock.now = 5
    assert breaker.allow()
    breaker.record(False)
    assert breaker.state is BreakerState.OPEN
    clock.now = 9
    assert not breaker.allow()
    clock.now = 10
    assert breaker.allow()


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        CircuitBreaker(failures=0)
    with pytest.raises(ValueError):
        CircuitBreaker(reset_s=0)
