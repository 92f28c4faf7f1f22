"""The judge interface: anything that scores a (question, contexts, answer) record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from ragas_trace.results import ALL_METRICS, DEFAULT_THRESHOLDS, Metric, Scores


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


def judge_thresholds(judge: object) -> dict[str, float]:
    """Each metric's pass threshold for ``judge``: its own ``thresholds`` (a mapping by
    metric name, calibrated for it) where it has them, else ``DEFAULT_THRESHOLDS``."""
    own = getattr(judge, "thresholds", None)
    return dict(DEFAULT_THRESHOLDS) | (
        {str(k): float(v) for k, v in own.items()} if isinstance(own, Mapping) else {})
