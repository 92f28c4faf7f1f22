"""The rolling budget behind the token and USD budgets: bounded memory, a charge
leaves the window whole after the window, and the sampler's reasons."""

from __future__ import annotations

import pytest

from ragas_trace.scorer.budget import RollingBudget
from ragas_trace.scorer.sampler import Sampler
from ragas_trace.testing.tracing import InMemoryTracing


def test_spend_counts_for_the_window_then_leaves_it():
    budget = RollingBudget(1.0, 86400.0)
    budget.charge(0.6, now=10.0)
    assert not budget.exhausted(now=20.0)
    budget.charge(0.6, now=30.0)
    assert budget.exhausted(now=86399.0)  # within a day (less one bucket) of the charges
    assert not budget.exhausted(now=86400.0 + 60.0)  # both a day old: refilled
    assert budget.spent == 0.0


def test_memory_is_bounded_by_the_buckets_not_the_charges():
    budget = RollingBudget(1e9, 3600.0, buckets=60)
    for i in range(100_000):
        budget.charge(1.0, now=i * 0.5)  # two charges a second for 14 hours
    assert len(budget._buckets) <= 61
    assert budget.spent == pytest.approx(3600 * 2, abs=60 * 2)


def test_a_zero_limit_is_no_budget_and_a_negative_one_is_refused():
    assert not RollingBudget(0.0, 60.0).exhausted(now=0.0)
    with pytest.raises(ValueError):
        RollingBudget(-1.0, 60.0)


def test_the_sampler_says_which_budget_refused():
    now = [0.0]
    sampler = Sampler(usd_budget_per_day=0.5, token_budget_per_hour=10_000,
                      clock=lambda: now[0])
    tracing = InMemoryTracing()
    with tracing.tracer.start_as_current_span("rag"):
        pass
    span = tracing.spans()[0]
    assert sampler.decide(span).sampled
    sampler.charge(100, 0.5)
    assert sampler.decide(span).reason == "usd_budget"
    sampler.charge(10_000, float("nan"))  # a NaN price does not disable the budget
    assert sampler.decide(span).reason == "token_budget"
    now[0] += 3600.0
    assert sampler.decide(span).reason == "usd_budget"
    now[0] += 86400.0
    assert sampler.decide(span).sampled
