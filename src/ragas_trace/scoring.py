"""``score()`` and ``ascore()``: the three metrics of one (question, contexts,
answer) record, by the local judge, the OpenAI-compatible judge or any ``Judge``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from ragas_trace.judges import resolve_judge
from ragas_trace.judges.base import Judge
from ragas_trace.results import ALL_METRICS, Metric, Scores


async def ascore(
    question: str | None,
    contexts: Sequence[str] | str,
    answer: str | None,
    judge: str | Judge | None = "local",
    metrics: Iterable[Metric | str] | None = None,
) -> Scores:
    """Score one record. ``contexts`` is the retrieved passages (a single string is one
    passage). ``judge`` is ``"local"``, ``"openai"`` (``"openai:MODEL"``) or a ``Judge``;
    a judge made here from a name is closed afterwards, a given one is left open.

    Never raises for a bad record or a failing judge: see ``Scores.status``.
    Raises ``ValueError`` for an unknown judge or metric name."""
    wanted = ALL_METRICS if metrics is None else frozenset(Metric(m) for m in metrics)
    passages = [contexts] if isinstance(contexts, str) else list(contexts)
    if not all(isinstance(p, str) for p in passages):
        raise ValueError("contexts: expected a string or a sequence of strings")
    resolved = resolve_judge(judge)
    try:
        return await resolved.evaluate(question, passages, answer, wanted)
    finally:
        if resolved is not judge:
            await resolved.aclose()


def score(
    question: str | None,
    contexts: Sequence[str] | str,
    answer: str | None,
    judge: str | Judge | None = "local",
    metrics: Iterable[Metric | str] | None = None,
) -> Scores:
    """Synchronous ``ascore``; runs its own event loop, so call it from code that is
    not already inside one (there, ``await ascore(...)``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(ascore(question, contexts, answer, judge, metrics))
    raise RuntimeError("score() was called inside a running event loop; use await ascore()")
