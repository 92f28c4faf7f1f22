"""``score()`` and ``ascore()``: the three metrics of one (question, contexts,
answer) record, by the local judge, the OpenAI-compatible judge or any ``Judge``."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from ragas_trace.judges import resolve_judge
from ragas_trace.judges.base import Judge
from ragas_trace.results import ALL_METRICS, Metric, MetricResult, MetricStatus, Scores

_USES_CONTEXT = frozenset({Metric.FAITHFULNESS, Metric.CONTEXT_RELEVANCE})


def _passages(contexts: object) -> tuple[list[str], str | None]:
    """The passages, and why ``contexts`` was refused (``None`` when it was not)."""
    if isinstance(contexts, str):
        return [contexts], None
    if not isinstance(contexts, Iterable) or isinstance(contexts, bytes | bytearray | Mapping):
        kind = "a mapping" if isinstance(contexts, Mapping) else type(contexts).__name__
        return [], f"invalid contexts: expected a string or a sequence of strings, got {kind}"
    passages = list(contexts)
    wrong = [type(p).__name__ for p in passages if not isinstance(p, str)]
    if wrong:
        return [], f"invalid contexts: expected strings, got a {wrong[0]} passage"
    return passages, None


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
    ``contexts`` is a string or any iterable of strings (list, tuple, generator); of
    the wrong type (``None``, a number, a mapping, bytes, a list holding a
    non-string) it is scored as no context: faithfulness and context
    relevance get status ``no_context`` with a reason starting ``invalid contexts:``;
    answer relevance, which reads no context, is scored as usual.
    Raises ``ValueError`` for an unknown judge or metric name."""
    wanted = ALL_METRICS if metrics is None else frozenset(Metric(m) for m in metrics)
    passages, refused = _passages(contexts)
    resolved = resolve_judge(judge)
    try:
        scores = await resolved.evaluate(question, passages, answer, wanted)
    finally:
        if resolved is not judge:
            await resolved.aclose()
    if refused is None:
        return scores
    results = dict(scores.results)
    for metric in wanted & _USES_CONTEXT:
        if scores.result(metric).status is MetricStatus.NO_CONTEXT:
            results[metric] = MetricResult.unscored(MetricStatus.NO_CONTEXT, refused)
    return dataclasses.replace(scores, results=results)


def score(
    question: str | None,
    contexts: Sequence[str] | str,
    answer: str | None,
    judge: str | Judge | None = "local",
    metrics: Iterable[Metric | str] | None = None,
) -> Scores:
    """Synchronous ``ascore`` (same contract: a bad record, ``contexts`` of the wrong
    type included, is a status with a reason); runs its own event loop, so call it
    from code that is not already inside one (there, ``await ascore(...)``)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(ascore(question, contexts, answer, judge, metrics))
    raise RuntimeError("score() was called inside a running event loop; use await ascore()")
