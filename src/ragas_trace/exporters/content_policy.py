"""What of the request's content leaves the process.

Applied where spans are exported, to every span (RAG roots, retrievers, LLM
spans, evaluation spans), their events and their status: the question, the
retrieved passages, the answer, prompt/completion messages, exception messages
and stack traces (exception events) and status descriptions are kept, dropped,
or passed through a user redaction function, and optionally truncated. The
scorer reads the full text from the span it holds before this runs, so "no
content in my traces" and "score every answer" hold together."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from typing import Final

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import Status
from opentelemetry.util.types import AttributeValue

from ragas_trace import semconv as sc
from ragas_trace.exporters.span_copy import copy_span

logger = logging.getLogger("ragas_trace")

MODES: Final = ("keep", "drop", "redact")
Redactor = Callable[[str], str]

_EXACT_KEYS = frozenset({
    sc.INPUT_VALUE, sc.OUTPUT_VALUE, sc.TRACELOOP_ENTITY_INPUT, sc.TRACELOOP_ENTITY_OUTPUT,
    sc.EXCEPTION_MESSAGE, sc.EXCEPTION_STACKTRACE,
})
_CONTENT_KEY = re.compile(
    r"^(?:(?:retrieval\.documents|reranker\.(?:input|output)_documents)\.\d+\.document\.content"
    r"|llm\.(?:input|output)_messages\..*"
    r"|llm\.prompts\..*"
    r"|gen_ai\.(?:prompt|completion)(?:\..*)?"
    r"|gen_ai\.(?:input|output)\.messages"
    r"|gen_ai\.system_instructions)$")


def is_content_key(key: str) -> bool:
    """Whether ``key`` carries request content (question, passages, answer, messages)."""
    return key in _EXACT_KEYS or _CONTENT_KEY.match(key) is not None


class ContentPolicy:
    """``mode``: keep | drop | redact (needs ``redact``); ``max_chars`` > 0 truncates.

    A redaction function that raises drops the attribute: failing closed is the
    only safe choice when the user asked for content to be cleaned.
    """

    def __init__(self, mode: str = "keep", redact: Redactor | None = None,
                 max_chars: int = 0) -> None:
        if mode not in MODES:
            raise ValueError(f"content mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode == "redact" and redact is None:
            raise ValueError("content mode 'redact' needs a redact function")
        if redact is not None and not callable(redact):
            raise ValueError("redact must be a callable str -> str")
        if max_chars < 0:
            raise ValueError(f"max_chars must be >= 0, got {max_chars!r}")
        self.mode = mode
        self._redact = redact
        self.max_chars = max_chars
        self._warned = False

    @property
    def passthrough(self) -> bool:
        return self.mode == "keep" and not self.max_chars

    def text(self, value: str) -> str | None:
        """``value`` as it may leave the process, or ``None`` if it may not."""
        if self.mode == "drop":
            return None
        if self.mode == "redact" and self._redact is not None:
            try:
                redacted = self._redact(value)
            except Exception:
                self._warn_once()
                return None
            if not isinstance(redacted, str):
                self._warn_once()
                return None
            value = redacted
        if self.max_chars and len(value) > self.max_chars:
            value = value[: self.max_chars]
        return value

    def attributes(self, attrs: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
        """``attrs`` with every content attribute transformed (or left out)."""
        out: dict[str, AttributeValue] = {}
        for key, value in attrs.items():
            if not is_content_key(key):
                out[key] = value
            elif isinstance(value, str):
                text = self.text(value)
                if text is not None:
                    out[key] = text
            elif self.mode == "keep":
                out[key] = value
        return out

    def events(self, span: ReadableSpan) -> list[Event] | None:
        """Cleaned copies of the span's events (e.g. GenAI prompt/completion events), or
        ``None`` when none carries content."""
        if self.passthrough or not any(is_content_key(k) for e in span.events
                                       for k in (e.attributes or {})):
            return None
        return [Event(e.name, self.attributes(e.attributes or {}), e.timestamp)
                for e in span.events]

    def status(self, span: ReadableSpan) -> Status | None:
        """The span's status with its description cleaned, or ``None`` when it has no
        description (an error status's description is usually the exception text)."""
        if self.passthrough or not span.status.description:
            return None
        return Status(span.status.status_code, self.text(span.status.description))

    def apply(self, span: ReadableSpan) -> ReadableSpan:
        """``span`` unchanged when nothing needs changing, else a cleaned copy."""
        if self.passthrough:
            return span
        attrs = span.attributes or {}
        events = self.events(span)
        status = self.status(span)
        if events is None and status is None and not any(is_content_key(k) for k in attrs):
            return span
        return copy_span(span, self.attributes(attrs), events=events, status=status)

    def _warn_once(self) -> None:
        if not self._warned:
            self._warned = True
            logger.warning("the content redaction function failed or returned a non-string; "
                           "the affected attributes are dropped")
