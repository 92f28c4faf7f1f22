from __future__ import annotations

import random

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.scorer.sampler import Sampler, trace_id_sampled


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def span(trace_id: int, **attrs: object) -> ReadableSpan:
    return ReadableSpan("root", context=trace_api.SpanContext(trace_id, 1, False),
                        attributes=attrs)  # type: ignore[arg-type]


def test_ratio_is_a_pure_function_of_the_trace_id():
    rng = random.Random(7)
    ids = [rng.getrandbits(128) for _ in range(4000)]
    first = [Sampler(0.25).decide(span(t)).sampled for t in ids]
    again = [Sampler(0.25).decide(span(t)).sampled for t in ids]  # "another process"
    assert first == again
    assert first == [trace_id_sampled(t, 0.25) for t in ids]
    assert 0.21 < sum(first) / len(ids) < 0.29


def test_rate_bounds():
    assert trace_id_sampled(2**127, 1.0)
    assert not trace_id_sampled(0, 0.0)
    assert trace_id_sampled(0, 0.001)  # lowest 64 bits 0: always under the bound


def test_per_minute_cap_with_always_bypassing_it():
    clock = Clock()
    sampler = Sampler(1.0, max_per_minute=2, clock=clock)
    assert [sampler.decide(span(i)).sampled for i in range(1, 4)] == [True, True, False]
    assert sampler.decide(span(9)).reason == "rate_limit"
    assert sampler.decide(span(9, **{sc.RAGAS_ALWAYS_SCORE: True})).sampled
    clock.now += 61
    assert sampler.decide(span(10)).sampled


def test_token_budget_per_hour_applies_to_always_too():
    clock = Clock()
    sampler = Sampler(1.0, token_budget_per_hour=1000, clock=clock)
    assert sampler.decide(span(1)).sampled
    sampler.charge(600)
    assert sampler.decide(span(2)).sampled
    sampler.charge(600)
    decision = sampler.decide(span(3, **{sc.RAGAS_ALWAYS_SCORE: True}))
    assert (decision.sampled, decision.reason) == (False, "token_budget")
    clock.now += 3601
    assert sampler.decide(span(4)).sampled


def test_always_rules_attribute_and_predicate():
    sampler = Sampler(0.0, always=lambda s: (s.attributes or {}).get("tier") == "gold")
    assert not sampler.decide(span(1)).sampled
    assert sampler.decide(span(1, **{sc.RAGAS_ALWAYS_SCORE: True})).reason == "always"
    assert sampler.decide(span(1, **{sc.RAGAS_ALWAYS_SCORE: "true"})).sampled
    assert sampler.decide(span(1, tier="gold")).sampled
    assert not sampler.decide(span(1, **{sc.RAGAS_ALWAYS_SCORE: False})).sampled


def test_a_failing_predicate_means_not_always():
    def boom(_: ReadableSpan) -> bool:
        raise RuntimeError("user bug")

    assert not Sampler(0.0, always=boom).decide(span(1)).sampled


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        Sampler(1.5)
    with pytest.raises(ValueError):
        Sampler(1.0, max_per_minute=-1)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "700"])
def test_a_charge_that_is_not_a_count_does_not_disable_the_budget(bad):
    sampler = Sampler(1.0, token_budget_per_hour=1000, clock=Clock())
    sampler.charge(bad)  # type: ignore[arg-type]
    sampler.charge(600)
    assert sampler.decide(span(1)).sampled
    sampler.charge(600)
    assert sampler.decide(span(2)).reason == "token_budget"
