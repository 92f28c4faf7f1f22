"""App names announced by the collectors as their handlers are made, for the scoring
pipelines to create the app's metric series at zero before its first score (see
``exporters.series_at_zero``). A neutral module, so that collectors import nothing
of the scoring side: a pipeline listens, a collector announces. Listeners are held
weakly; a failing one is recorded, never raised to the app."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from ragas_trace._internal_errors import record_internal_error

# (app name, the handler's tracer provider or None for the global one)
Listener = Callable[[str, Any], None]
_listeners: list[weakref.WeakMethod[Listener]] = []
_lock = threading.Lock()


def listen(method: Listener) -> None:
    """``method`` (a bound method, held weakly) hears every announced app name."""
    with _lock:
        _listeners[:] = [ref for ref in _listeners if ref() is not None]
        _listeners.append(weakref.WeakMethod(method))


def announce(app_name: str | None, tracer_provider: Any = None) -> None:
    """A handler for ``app_name`` was made (on ``tracer_provider``, None: the global
    one). Never raises."""
    if not app_name:
        return
    with _lock:
        listeners = [ref() for ref in _listeners]
    for listener in listeners:
        if listener is None:
            continue
        try:
            listener(app_name, tracer_provider)
        except Exception as exc:
            record_internal_error("app_names.announce", exc)
