"""Process-wide install through langchain-core's configure hook.

LangChain asks each registered hook's variable for a handler whenever it builds a
callback manager. A ``ContextVar`` would not do here: a value set in one thread or
task is invisible to threads started elsewhere. The hook is therefore given a slot
with the same ``get()`` that returns the one installed handler, from any thread or
task. ``uninstrument()`` empties the slot; the hook stays registered (langchain-core
has no unregister) and costs one attribute read per callback manager. The handler
also wraps the vector-store search methods (``_vector_stores``), the one thing no
callback reports; ``uninstrument()`` unwraps them."""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any, cast

from langchain_core.tracers.context import register_configure_hook
from opentelemetry.trace import TracerProvider

from ragas_trace.collectors.langchain import _vector_stores
from ragas_trace.collectors.langchain._handler import RagasCallbackHandler


class _HandlerSlot:
    """Duck-types the ``ContextVar.get()`` that ``register_configure_hook`` uses."""

    def __init__(self) -> None:
        self.handler: RagasCallbackHandler | None = None

    def get(self) -> RagasCallbackHandler | None:
        return self.handler


_slot = _HandlerSlot()
_lock = threading.Lock()
_registered = False


def instrument(tracer_provider: TracerProvider | None = None,
               **kwargs: Any) -> RagasCallbackHandler:
    """Attach one ``RagasCallbackHandler`` to every LangChain run in the process.

    Keyword arguments are the handler's. Calling it again replaces the handler.
    Returns the installed handler. Do not also pass a ``RagasCallbackHandler`` to
    calls explicitly: each handler makes its own trace.
    """
    global _registered
    handler = RagasCallbackHandler(tracer_provider, **kwargs)
    with _lock:
        if not _registered:
            register_configure_hook(cast("ContextVar[Any]", _slot), inheritable=True)
            _registered = True
        _slot.handler = handler
    return handler


def uninstrument() -> None:
    """Stop attaching the handler to new runs (runs already started finish as usual),
    and put the vector-store search methods back (a handler made later wraps them
    again)."""
    with _lock:
        _slot.handler = None
    _vector_stores.disable()


def installed_handler() -> RagasCallbackHandler | None:
    """The handler ``instrument()`` installed, if any."""
    return _slot.handler
