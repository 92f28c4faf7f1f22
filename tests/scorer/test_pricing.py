"""Prices per model: the setting's format, its errors, and what a usage costs."""

from __future__ import annotations

import pytest

from ragas_trace.config import Settings
from ragas_trace.results import JudgeUsage
from ragas_trace.scorer.pricing import (
    DEFAULT_PRICES,
    JudgePricing,
    Price,
    judge_pricing,
    parse_prices,
)


class Judge:
    def __init__(self, model: str | None, embedding_model: str | None = None) -> None:
        self.model = model
        self.embedding_model = embedding_model


def test_the_setting_reads_pairs_and_mappings():
    assert parse_prices("my/model:8b=0.5/1.5, emb=0.01") == {
        "my/model:8b": Price(0.5, 1.5), "emb": Price(0.01, 0.0)}
    assert parse_prices({"a": (1, 2), "b": 3, "c": Price(0.1, 0.2)}) == {
        "a": Price(1.0, 2.0), "b": Price(3.0), "c": Price(0.1, 0.2)}


@pytest.mark.parametrize("bad", ["gpt-4o", "=1/2", "m=x", "m=-1", "m=1/2/3", "m=nan", ""])
def test_a_bad_price_is_an_error_naming_it(bad):
    with pytest.raises(ValueError):
        parse_prices(bad)
    with pytest.raises(ValueError, match="judge_prices"):
        Settings.load(env={}, judge_prices=bad or 5)


def test_a_bad_environment_price_is_skipped_not_fatal():
    assert Settings.load(env={"RAGAS_TRACE_JUDGE_PRICES": "m=oops"}).judge_prices is None


def test_cost_prices_embedding_tokens_at_the_embedding_models_rate():
    pricing = JudgePricing(Price(0.15, 0.60), Price(0.02))
    usage = JudgeUsage(prompt_tokens=1_000_000 + 500_000, completion_tokens=250_000,
                       embedding_tokens=500_000)
    assert pricing.cost_usd(usage) == pytest.approx(0.15 + 0.60 / 4 + 0.02 / 2)


def test_judges_are_priced_by_exact_model_name_overrides_win():
    pricing, missing = judge_pricing(Judge("gpt-4o-mini", "text-embedding-3-small"))
    assert missing == [] and pricing == JudgePricing(DEFAULT_PRICES["gpt-4o-mini"],
                                                     DEFAULT_PRICES["text-embedding-3-small"])
    assert judge_pricing(Judge("gpt-4o-2024-05-13"))[1] == ["gpt-4o-2024-05-13"]
    pricing, _ = judge_pricing(Judge("gpt-4o-mini"), {"gpt-4o-mini": Price(1.0, 2.0)})
    assert pricing is not None and pricing.chat == Price(1.0, 2.0)
    assert judge_pricing(object()) == (JudgePricing(), [])  # names no model: free
