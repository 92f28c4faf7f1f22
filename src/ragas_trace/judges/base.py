"""The judge interface: anything that scores a (question, contexts, answer) record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ragas_trace.results import ALL_METRICS, Metric, Scores


@runtime_checkable
class Judge(Protocol):
    """Scores records. ``evaluate`` is called on the scorer's own event loop, possibly
    for many records at once; it must never raise for a bad record or a failing
    endpoint: those are metric statuses in the returned ``Scores``."""

    @property
    def name(self) -> str:
        """Stable, low-cardinality identity, e.g. ``local:minilm-l6-int8`` or
        ``openai:gpt-4o-mini``; used as a metric attribute and on spans."""
        ...

    async def evaluate(
        self,
        question: str | None,
        contexts: Sequence[str],
        answer: str | None,
        metrics: frozenset[Metric] = ALL_METRICS,
    ) -> Scores: ...

    async def aclose(self) -> None:
        """Release clients and sessions; safe to call twice."""
        ...
