"""The span handler and event handler registered on LlamaIndex's root dispatcher.

Both delegate to one ``Tracker``. The dispatcher swallows whatever a handler raises,
silently; ours catch their own failures first so that each is logged once and counted
(``record_internal_error``). Neither ever touches what the engine returns, except
that a streaming response's generator is replaced by a transparent wrapper."""

from __future__ import annotations

import inspect
from typing import Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.collectors.llamaindex._tracker import Tracker

_LLM_END_EVENTS = frozenset({LLMCompletionEndEvent, LLMChatEndEvent})
_LLM_START_EVENTS = frozenset({LLMCompletionStartEvent, LLMChatStartEvent})


class RagasSpanHandler(BaseSpanHandler[BaseSpan]):
    """Overrides ``span_enter``/``span_exit``/``span_drop`` directly: the base class's
    ``open_spans`` bookkeeping (a pydantic span object and a lock per span) is not needed."""

    tracker: Any = None

    def __init__(self, tracker: Tracker) -> None:
        super().__init__()
        self.tracker = tracker

    @classmethod
    def class_name(cls) -> str:
        return "RagasSpanHandler"

    # Most dispatcher spans belong to objects without a role (splitters, synthesizers,
    # embeddings...): for them each callback is one dict lookup.

    def span_enter(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                   parent_id: str | None = None, tags: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
        try:
            tracker = self.tracker
            role = tracker.roles.get(type(instance))
            if role is None:
                role = tracker.role(instance)
            if role:
                tracker.enter(id_, bound_args, instance, role, tags)
        except Exception as exc:
            record_internal_error("llamaindex.span_enter", exc)

    def span_exit(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                  result: Any = None, **kwargs: Any) -> None:
        try:
            tracker = self.tracker
            role = tracker.roles.get(type(instance))
            if role:
                tracker.exit(id_, instance, role, result)
        except Exception as exc:
            record_internal_error("llamaindex.span_exit", exc)

    def span_drop(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                  err: BaseException | None = None, **kwargs: Any) -> None:
        try:
            tracker = self.tracker
            role = tracker.roles.get(type(instance))
            if role:
                tracker.drop(id_, instance, role, err)
        except Exception as exc:
            record_internal_error("llamaindex.span_drop", exc)

    # The three hooks below serve the base class's span_enter/exit/drop, which this
    # class replaces; they exist because the base class declares them abstract.
    def new_span(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                 parent_span_id: str | None = None, tags: dict[str, Any] | None = None,
                 **kwargs: Any) -> None:
        return None

    def prepare_to_exit_span(self, id_: str, bound_args: inspect.BoundArguments,
                             instance: Any = None, result: Any = None, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, id_: str, bound_args: inspect.BoundArguments,
                             instance: Any = None, err: BaseException | None = None,
                             **kwargs: Any) -> None:
        return None


class RagasEventHandler(BaseEventHandler):
    """Only LLM events matter: start events carry the prompt, end events the
    completion and a streamed call's usage and end."""

    tracker: Any = None

    @classmethod
    def class_name(cls) -> str:
        return "RagasEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        kind = type(event)
        try:
            if kind in _LLM_END_EVENTS:
                self.tracker.llm_ended(event.span_id, getattr(event, "response", None))
            elif kind in _LLM_START_EVENTS:
                self.tracker.llm_started(event)
        except Exception as exc:
            record_internal_error("llamaindex.event", exc)
