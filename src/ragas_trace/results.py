"""The result of scoring one request: a value or a reasoned status per metric, plus
the evidence a user needs to trust it (statements and verdicts, generated questions,
kept context sentences) and what the judge cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Metric(StrEnum):
    FAITHFULNESS = "faithfulness"
    ANSWER_RELEVANCE = "answer_relevance"
    CONTEXT_RELEVANCE = "context_relevance"


ALL_METRICS: frozenset[Metric] = frozenset(Metric)

# Pass thresholds for a judge that has none of its own (the LLM judges): the local
# judge's are calibrated for it (``judges/local/data/support_model.json``).
DEFAULT_THRESHOLDS: Mapping[str, float] = {
    "faithfulness": 0.7, "answer_relevance": 0.7, "context_relevance": 0.3}


class MetricStatus(StrEnum):
    """Why a metric has the value it has. Only ``SCORED`` carries a number."""

    SCORED = "scored"
    NO_STATEMENTS = "no_statements"  # refusal or empty answer: nothing to verify
    NO_ANSWER = "no_answer"  # the request produced no answer text at all
    NO_QUESTION = "no_question"
    NO_CONTEXT = "no_context"  # nothing was retrieved
    FAILED = "failed"  # the judge failed: unparseable, truncated, HTTP error...
    TIMEOUT = "timeout"
    SKIPPED = "skipped"  # not requested


@dataclass(frozen=True, slots=True)
class MetricResult:
    value: float | None
    status: MetricStatus
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.status is MetricStatus.SCORED:
            if self.value is None or not 0.0 <= self.value <= 1.0:
                raise ValueError(f"a scored metric needs a value in [0, 1], got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"status {self.status} carries no value, got {self.value!r}")

    @classmethod
    def scored(cls, value: float) -> MetricResult:
        return cls(min(1.0, max(0.0, float(value))), MetricStatus.SCORED)

    @classmethod
    def unscored(cls, status: MetricStatus, reason: str | None = None) -> MetricResult:
        return cls(None, status, reason)


@dataclass(frozen=True, slots=True)
class StatementVerdict:
    statement: str
    supported: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class JudgeUsage:
    """What scoring one record cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    chat_calls: int = 0
    embedding_calls: int = 0
    rounds: int = 0
    # Replies whose ``usage`` was not a plausible token count (NaN, negative, text):
    # ignored, so neither charged to the token budget nor put on spans.
    invalid_usage: int = 0
    # Of ``prompt_tokens``, those sent to the embedding model: priced at its own rate.
    embedding_tokens: int = 0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.chat_calls + other.chat_calls,
            self.embedding_calls + other.embedding_calls,
            max(self.rounds, other.rounds),
            self.invalid_usage + other.invalid_usage,
            self.embedding_tokens + other.embedding_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Scores:
    """Scores of one (question, contexts, answer) record by one judge."""

    judge: str
    results: Mapping[Metric, MetricResult]
    statements: tuple[StatementVerdict, ...] = ()
    generated_questions: tuple[str, ...] = ()
    context_sentences: int = 0
    kept_sentences: tuple[str, ...] = ()
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    duration_s: float = 0.0

    def result(self, metric: Metric | str) -> MetricResult:
        return self.results.get(Metric(metric), MetricResult.unscored(MetricStatus.SKIPPED))

    @property
    def faithfulness(self) -> float | None:
        return self.result(Metric.FAITHFULNESS).value

    @property
    def answer_relevance(self) -> float | None:
        return self.result(Metric.ANSWER_RELEVANCE).value

    @property
    def context_relevance(self) -> float | None:
        return self.result(Metric.CONTEXT_RELEVANCE).value

    @property
    def status(self) -> dict[str, MetricStatus]:
        return {str(m): self.result(m).status for m in Metric}

    @property
    def reasons(self) -> dict[str, str | None]:
        return {str(m): self.result(m).reason for m in Metric}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view, as written by ``ragas-trace score``."""
        return {
            "judge": self.judge,
            "scores": {str(m): self.result(m).value for m in Metric},
            "status": {str(m): str(self.result(m).status) for m in Metric},
            "reasons": {str(m): self.result(m).reason for m in Metric if self.result(m).reason},
            "statements": [
                {"statement": s.statement, "supported": s.supported, "reason": s.reason}
                for s in self.statements
            ],
            "generated_questions": list(self.generated_questions),
            "context_sentences": self.context_sentences,
            "kept_sentences": list(self.kept_sentences),
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "chat_calls": self.usage.chat_calls,
                "embedding_calls": self.usage.embedding_calls,
                "rounds": self.usage.rounds,
            },
            "duration_s": round(self.duration_s, 6),
        }
