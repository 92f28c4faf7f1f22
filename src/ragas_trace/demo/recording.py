"""A judge wrapper that keeps each result's evidence (statements and verdicts) for
the demo's table: spans carry scores and counts, never the statements themselves."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ragas_trace.judges.base import Judge, judge_thresholds
from ragas_trace.results import ALL_METRICS, Metric, Scores


class RecordingJudge:
    """Delegates to ``inner``; remembers the last ``capacity`` results by
    (question, answer)."""

    def __init__(self, inner: Judge, capacity: int = 10_000) -> None:
        self._inner = inner
        self._capacity = capacity
        self._scores: OrderedDict[tuple[str | None, str | None], Scores] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def thresholds(self) -> dict[str, float]:
        """The inner judge's pass thresholds: the labels and verdicts follow it."""
        return judge_thresholds(self._inner)

    async def evaluate(
        self,
        question: str | None,
        contexts: Sequence[str],
        answer: str | None,
        metrics: frozenset[Metric] = ALL_METRICS,
    ) -> Scores:
        scores = await self._inner.evaluate(question, contexts, answer, metrics)
        with self._lock:
            self._scores[(question, answer)] = scores
            self._scores.move_to_end((question, answer))
            while len(self._scores) > self._capacity:
                self._scores.popitem(last=False)
        return scores

    async def aclose(self) -> None:
        await self._inner.aclose()

    def scores_for(self, question: str | None, answer: str | None) -> Scores | None:
        with self._lock:
            return self._scores.get((question, answer))
