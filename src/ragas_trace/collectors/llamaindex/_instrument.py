"""Install and remove the handler pair on LlamaIndex's root dispatcher."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from llama_index_instrumentation import get_dispatcher
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits
from opentelemetry.trace import TracerProvider

from ragas_trace import _app_names
from ragas_trace.collectors import _settings
from ragas_trace.collectors.llamaindex._handlers import RagasEventHandler, RagasSpanHandler
from ragas_trace.collectors.llamaindex._tracker import Tracker

_SCOPE = "ragas_trace.collectors.llamaindex"
# Attributes a retriever span carries besides its documents, plus headroom.
_RETRIEVER_BASE_ATTRIBUTES = 8

_lock = threading.Lock()
_installed: list[Instrumentation] = []


class Instrumentation:
    """One installed span/event handler pair; ``uninstrument()`` removes it."""

    def __init__(self, tracker: Tracker, scope: tuple[Any, ...]) -> None:
        self.tracker = tracker
        self.scope = scope
        self.span_handler = RagasSpanHandler(tracker)
        self.event_handler = RagasEventHandler(tracker=tracker)

    @property
    def open_runs(self) -> int:
        """Requests started and not yet ended or evicted."""
        return self.tracker.open_runs

    @property
    def evicted_runs(self) -> int:
        return self.tracker.evicted_runs

    def uninstrument(self) -> None:
        """Remove the handlers; requests still open are ended as they are."""
        with _lock:
            if self in _installed:
                _installed.remove(self)
                _detach(self)
        self.tracker.close()


def instrument(
    tracer_provider: TracerProvider | None = None,
    tags: Mapping[str, Any] | None = None,
    app_name: str | None = None,
    *,
    engines: Iterable[Any] | None = None,
    max_documents: int | None = None,
    run_ttl_s: float | None = None,
    max_open_runs: int | None = None,
) -> Instrumentation:
    """Trace every LlamaIndex query/chat engine request in the process.

    ``tags``: capture only requests started inside LlamaIndex's
    ``instrument_tags({...})`` with all of these items. ``engines``: capture only
    requests made on these engine objects (held weakly). ``app_name``: recorded as
    ``ragas.app.name``, the score metrics' ``app`` label (default: none; the label
    is then the ``app_name`` setting). ``max_documents``,
    ``run_ttl_s``, ``max_open_runs``: as for the LangChain collector (env
    ``RAGAS_TRACE_MAX_DOCUMENTS``, ``RAGAS_TRACE_RUN_TTL_S``,
    ``RAGAS_TRACE_MAX_OPEN_RUNS``). Calling it again with the same ``tags`` and
    ``engines`` replaces the earlier installation; different scopes coexist.
    """
    if app_name is not None and not isinstance(app_name, str):
        raise ValueError(f"app_name must be a string, got {type(app_name).__name__}")
    if tags is not None and not isinstance(tags, Mapping):
        raise ValueError(f"tags must be a mapping, got {type(tags).__name__}")
    engine_set: weakref.WeakSet[Any] | None = None
    if engines is not None:
        try:
            engine_set = weakref.WeakSet(engines)
        except TypeError as exc:
            raise ValueError(f"engines must be an iterable of engine objects: {exc}") from exc
    _app_names.announce(app_name, tracer_provider)
    limit = SpanLimits().max_span_attributes
    tracker = Tracker(
        trace.get_tracer(_SCOPE, tracer_provider=tracer_provider),
        app_name,
        tags,
        engine_set,
        max_documents=_settings.setting(_settings.MAX_DOCUMENTS, max_documents),
        document_budget=None if limit is None else max(limit - _RETRIEVER_BASE_ATTRIBUTES, 0),
        run_ttl_s=_settings.setting(_settings.RUN_TTL_S, run_ttl_s),
        max_open_runs=_settings.setting(_settings.MAX_OPEN_RUNS, max_open_runs),
    )
    scope = (
        frozenset((key, repr(value)) for key, value in (tags or {}).items()),
        None if engine_set is None else frozenset(id(e) for e in engine_set),
    )
    installation = Instrumentation(tracker, scope)
    with _lock:
        replaced = [i for i in _installed if i.scope == scope]
        for old in replaced:
            _installed.remove(old)
            _detach(old)
        dispatcher = get_dispatcher()
        dispatcher.add_span_handler(installation.span_handler)
        dispatcher.add_event_handler(installation.event_handler)
        _installed.append(installation)
    for old in replaced:
        old.tracker.close()
    return installation


def uninstrument() -> None:
    """Remove every installation made by ``instrument()``."""
    with _lock:
        removed = list(_installed)
        _installed.clear()
        for installation in removed:
            _detach(installation)
    for installation in removed:
        installation.tracker.close()


def _detach(installation: Instrumentation) -> None:
    # New lists, not in-place removal: the dispatcher may be iterating the old ones.
    dispatcher = get_dispatcher()
    dispatcher.span_handlers = [
        h for h in dispatcher.span_handlers if h is not installation.span_handler]
    dispatcher.event_handlers = [
        h for h in dispatcher.event_handlers if h is not installation.event_handler]
