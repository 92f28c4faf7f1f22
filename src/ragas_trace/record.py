"""``RagRecord``: the one internal record of a RAG request, built from spans by
``ragas_trace.extract`` and consumed by the scorer, the judges and the CLI."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def passage_score(value: Any) -> float | None:
    """A retriever's score as a finite float; None for what is not one (text, a
    boolean, NaN, infinity, an integer past a float's range)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        score = float(value)
    except OverflowError:
        return None
    return score if math.isfinite(score) else None


@dataclass(frozen=True, slots=True)
class Context:
    """One retrieved passage."""

    content: str
    id: str | None = None
    score: float | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RagRecord:
    """Question, retrieved passages and answer of one request, with where it came from."""

    question: str | None
    contexts: tuple[Context, ...]
    answer: str | None
    trace_id: int = 0
    span_id: int = 0
    app_name: str | None = None
    framework: str | None = None
    start_time_ns: int | None = None
    end_time_ns: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    # ``gen_ai.response.id`` of the request's last model call (the one that answered),
    # where an instrumentation recorded it on the LLM span.
    response_id: str | None = None
    # The model that answered: ``gen_ai.request.model`` (else ``llm.model_name``, else
    # ``gen_ai.response.model``) of the same call.
    model: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def context_texts(self) -> list[str]:
        return [c.content for c in self.contexts]

    @property
    def duration_ms(self) -> float | None:
        if self.start_time_ns is None or self.end_time_ns is None:
            return None
        return (self.end_time_ns - self.start_time_ns) / 1e6

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view; ``from_dict`` reads it back (the ``score`` command's format)."""
        return {
            "question": self.question,
            "contexts": [
                {k: v for k, v in (("content", c.content), ("id", c.id), ("score", c.score),
                                   ("metadata", dict(c.metadata) if c.metadata else None))
                 if v is not None}
                for c in self.contexts
            ],
            "answer": self.answer,
            "trace_id": f"{self.trace_id:032x}",
            "span_id": f"{self.span_id:016x}",
            "app_name": self.app_name,
            "framework": self.framework,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RagRecord:
        """Read a record; ``contexts`` may be strings or objects with ``content``.

        Raises ``ValueError`` with the offending key when a field has the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"a record must be a JSON object, got {type(data).__name__}")
        question = data.get("question")
        answer = data.get("answer")
        for key, value in (("question", question), ("answer", answer)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{key!r} must be a string or null, got {type(value).__name__}")
        raw_contexts = data.get("contexts", data.get("context", []))
        if isinstance(raw_contexts, str):
            raw_contexts = [raw_contexts]
        if not isinstance(raw_contexts, list):
            raise ValueError("'contexts' must be a list of strings or objects")
        contexts: list[Context] = []
        for i, item in enumerate(raw_contexts):
            if isinstance(item, str):
                contexts.append(Context(item))
            elif isinstance(item, Mapping) and isinstance(item.get("content"), str):
                score = item.get("score")
                contexts.append(Context(
                    item["content"],
                    id=str(item["id"]) if item.get("id") is not None else None,
                    score=passage_score(score),
                    metadata=item.get("metadata") if isinstance(item.get("metadata"), Mapping)
                    else None,
                ))
            else:
                raise ValueError(f"contexts[{i}] must be a string or an object with 'content'")
        return cls(
            question=question,
            contexts=tuple(contexts),
            answer=answer,
            trace_id=_hex_id(data.get("trace_id")),
            span_id=_hex_id(data.get("span_id")),
            app_name=data.get("app_name") if isinstance(data.get("app_name"), str) else None,
            framework=data.get("framework") if isinstance(data.get("framework"), str) else None,
        )


def _hex_id(value: Any) -> int:
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return 0
    return 0
