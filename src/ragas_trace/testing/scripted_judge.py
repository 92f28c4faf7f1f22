"""``ScriptedJudge``: a ``Judge`` whose behaviour a test sets (scores, latency,
failure, hang, a gate to hold calls), and which counts what it was asked.
No network; for tests of the scorer, processor and gateway plumbing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.results import (
    ALL_METRICS,
    JudgeUsage,
    Metric,
    MetricResult,
    MetricStatus,
    Scores,
    StatementVerdict,
)


class ScriptedJudge:
    """``mode``: ``ok`` (every metric = ``value``), ``fail`` (every metric FAILED),
    ``raise`` (breaks the protocol by raising) or ``hang`` (never returns).

    ``gate``, when given, holds every call until it is set. ``keep``, when given,
    are the context sentences it reports as needed to answer (counted against the
    contexts' own sentences, as the real judges do); else a fixed placeholder.
    """

    def __init__(self, value: float = 0.9, *, mode: str = "ok", delay_s: float = 0.0,
                 name: str = "scripted", gate: threading.Event | None = None,
                 prompt_tokens: int = 100, completion_tokens: int = 20,
                 keep: Sequence[str] | None = None) -> None:
        self.value = value
        self.mode = mode
        self.delay_s = delay_s
        self._name = name
        self.gate = gate
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.keep = tuple(keep) if keep is not None else None
        self._lock = threading.Lock()
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.closed = 0
        self.questions: list[str | None] = []
        self.contexts: list[list[str]] = []

    @property
    def name(self) -> str:
        return self._name

    async def evaluate(self, question: str | None, contexts: Sequence[str], answer: str | None,
                       metrics: frozenset[Metric] = ALL_METRICS) -> Scores:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.questions.append(question)
            self.contexts.append(list(contexts))
        try:
            if self.gate is not None:
                while not self.gate.is_set():
                    await asyncio.sleep(0.005)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.mode == "hang":
                await asyncio.Event().wait()
            if self.mode == "raise":
                raise RuntimeError("scripted judge failure")
            if self.mode == "fail":
                results = {m: MetricResult.unscored(MetricStatus.FAILED, "scripted failure")
                           for m in metrics}
                return Scores(self._name, results)
            results = {m: MetricResult.scored(self.value) for m in metrics}
            return Scores(
                self._name, results,
                statements=(StatementVerdict("s1", True), StatementVerdict("s2", False)),
                context_sentences=(4 if self.keep is None
                                   else sum(len(split_sentences(c)) for c in contexts)),
                kept_sentences=("k1",) if self.keep is None else self.keep,
                usage=JudgeUsage(self.prompt_tokens, self.completion_tokens, 2, 1, 1),
                duration_s=self.delay_s)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def aclose(self) -> None:
        self.closed += 1
