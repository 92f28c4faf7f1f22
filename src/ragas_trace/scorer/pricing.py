"""What the judge's tokens cost, in US dollars.

A price per model: input and output USD per million tokens. ``DEFAULT_PRICES`` holds
OpenAI's standard-tier list prices of the common chat and embedding models (cached
input and Batch API discounts are not applied, so the cost is an upper bound); the
``judge_prices`` setting adds models or overrides these. A model is looked up by its
exact name: a dated snapshot (``gpt-4o-2024-05-13``) can have a price of its own, so
it is never guessed from the family's.

A judge is priced from its ``model`` (chat) and ``embedding_model`` attributes; one
that names neither (the local judge runs in-process) costs nothing."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from ragas_trace.results import JudgeUsage

_PER_TOKEN = 1e-6  # prices are per million tokens


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens."""

    input_usd: float
    output_usd: float = 0.0


# OpenAI list prices, standard tier, USD per million tokens.
DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "gpt-3.5-turbo": Price(0.50, 1.50),
    "text-embedding-3-small": Price(0.02),
    "text-embedding-3-large": Price(0.13),
    "text-embedding-ada-002": Price(0.10),
}


def _usd(value: object, model: str) -> float:
    try:
        result = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"price of {model!r}: expected a number, got {value!r}") from None
    if not math.isfinite(result) or result < 0:
        raise ValueError(f"price of {model!r}: expected a number >= 0, got {value!r}")
    return result


def _price(model: str, value: object) -> Price:
    if isinstance(value, Price):
        return Price(_usd(value.input_usd, model), _usd(value.output_usd, model))
    if isinstance(value, str):
        value = value.split("/")
    if isinstance(value, list | tuple) and 1 <= len(value) <= 2:
        return Price(*(_usd(v, model) for v in value))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Price(_usd(value, model))
    raise ValueError(f"price of {model!r}: expected INPUT or INPUT/OUTPUT USD per million "
                     f"tokens, got {value!r}")


def parse_prices(value: object) -> dict[str, Price]:
    """``MODEL=INPUT/OUTPUT,MODEL2=INPUT`` (USD per million tokens; an embedding model
    has an input price only), or a mapping of model to ``Price``, ``(input, output)``
    or ``input``. Raises ``ValueError`` naming what is wrong."""
    if isinstance(value, Mapping):
        items = [(str(k).strip(), v) for k, v in value.items()]
    elif isinstance(value, str) and value.strip():
        items = []
        for part in value.split(","):
            model, sep, price = part.strip().rpartition("=")
            if not sep or not model.strip():
                raise ValueError(f"expected MODEL=INPUT/OUTPUT pairs separated by commas, "
                                 f"got {part.strip()!r}")
            items.append((model.strip(), price.strip()))
    else:
        raise ValueError(f"expected MODEL=INPUT/OUTPUT pairs or a mapping, got {value!r}")
    if any(not model for model, _ in items):
        raise ValueError("a price needs a model name")
    return {model: _price(model, price) for model, price in items}


@dataclass(frozen=True, slots=True)
class JudgePricing:
    """The prices of one judge's chat and embedding models."""

    chat: Price = Price(0.0)
    embedding: Price = Price(0.0)

    def cost_usd(self, usage: JudgeUsage) -> float:
        """What ``usage`` cost: embedding tokens at the embedding model's input price,
        the other prompt tokens and the completion tokens at the chat model's."""
        chat_in = max(0, usage.prompt_tokens - usage.embedding_tokens)
        return (chat_in * self.chat.input_usd
                + usage.completion_tokens * self.chat.output_usd
                + usage.embedding_tokens * self.embedding.input_usd) * _PER_TOKEN


def judge_models(judge: object) -> tuple[str | None, str | None]:
    """The judge's chat and embedding model names (``None`` where it has none)."""
    chat, embedding = getattr(judge, "model", None), getattr(judge, "embedding_model", None)
    return (chat if isinstance(chat, str) else None,
            embedding if isinstance(embedding, str) else None)


def judge_pricing(judge: object, prices: Mapping[str, Price] | None = None
                  ) -> tuple[JudgePricing | None, list[str]]:
    """The judge's pricing and ``[]``, or ``None`` and the models that have no price
    in ``prices`` (added to and overriding ``DEFAULT_PRICES``)."""
    table = {**DEFAULT_PRICES, **(prices or {})}
    chat, embedding = judge_models(judge)
    missing = [m for m in (chat, embedding) if m is not None and m not in table]
    if missing:
        return None, missing
    zero = Price(0.0)
    return JudgePricing(table[chat] if chat else zero,
                        table[embedding] if embedding else zero), []
