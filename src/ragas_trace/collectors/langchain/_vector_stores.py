"""Direct vector-store searches as retriever runs.

``vector_store.similarity_search(...)`` called in a ``@dynamic_prompt`` middleware,
a graph node or a tool fires no LangChain callback (only ``BaseRetriever.invoke``
does), so the passages it returns would leave no trace. The search methods of every
``VectorStore`` subclass (the ones that exist when capture is enabled, and those
defined later, through a ``__init_subclass__`` hook) are therefore wrapped: when the
running LangChain config (langchain-core's ``var_child_runnable_config``) carries a
``RagasCallbackHandler``, the search is reported to that handler, and only to it
(other tracers see no extra run), as a retriever run under the current run, named
``<Store>.<method>``, with the query and the Documents (``*_with_score``: their
scores as ``document.score``).

Outside such a run the wrapper costs two context-variable reads. It never changes
what the app gets: the original method is called exactly once with the same
arguments, its result or exception passes through untouched, and a failure of our
own is counted, never raised. A search inside a search (``similarity_search`` over
``similarity_search_with_score``) or inside a retriever run (``VectorStoreRetriever``)
is the outer one's: it reports nothing (``_searching``, ``_retriever``)."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any
from uuid import UUID, uuid4

from langchain_core.documents import Document
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.vectorstores import VectorStore

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import record_internal_error

if TYPE_CHECKING:
    from ragas_trace.collectors.langchain._handler import RagasCallbackHandler

_SYNC_METHODS = (
    "similarity_search", "similarity_search_with_score",
    "similarity_search_with_relevance_scores", "similarity_search_by_vector",
    "similarity_search_with_score_by_vector", "max_marginal_relevance_search",
    "max_marginal_relevance_search_by_vector")
METHODS = _SYNC_METHODS + tuple("a" + name for name in _SYNC_METHODS)
# The keyword that hands the scores of a ``*_with_score`` search to the handler's
# ``on_retriever_end`` (no other handler ever receives it).
SCORES = "ragas_trace_scores"
_ORIGINAL = "__ragas_trace_original__"

# Set while one of our wrappers runs in this context: the searches it makes are its own.
_searching: ContextVar[bool] = ContextVar("ragas_trace_vector_store_search", default=False)
# The latest outermost retriever run a handler saw start in this context, as (handler, run
# id, parent run id). A retriever does not make itself the current run, so its
# searches run under its parent: a search under that parent, reported to that
# handler while the run is open, is the retriever's. Never reset (a run may end in
# another context): a stale value matches no open run.
_Retriever = tuple["RagasCallbackHandler", int, int | None]
_retriever: ContextVar[_Retriever | None] = ContextVar("ragas_trace_retriever_run",
                                                       default=None)

_lock = threading.Lock()
_originals: dict[tuple[type, str], Callable[..., Any]] = {}
_enabled = False
_previous_init_subclass: Any = None
_handler_type: type[RagasCallbackHandler] | None = None


def enable() -> None:
    """Wrap the search methods of every ``VectorStore`` subclass, now and later.
    Idempotent."""
    global _enabled, _handler_type, _previous_init_subclass
    if _enabled:
        return
    from ragas_trace.collectors.langchain._handler import RagasCallbackHandler as handler_class

    with _lock:
        if _enabled:
            return
        _handler_type = handler_class
        pending: list[type] = [VectorStore]
        seen: set[type] = set()
        while pending:
            cls = pending.pop()
            if cls in seen:
                continue
            seen.add(cls)
            _wrap_class(cls)
            pending.extend(cls.__subclasses__())
        _previous_init_subclass = VectorStore.__dict__.get("__init_subclass__")
        VectorStore.__init_subclass__ = classmethod(_on_subclass)  # type: ignore[assignment]
        _enabled = True


def disable() -> None:
    """Put every wrapped method back and remove the subclass hook."""
    global _enabled
    with _lock:
        if not _enabled:
            return
        if _previous_init_subclass is None:
            del VectorStore.__init_subclass__
        else:
            VectorStore.__init_subclass__ = _previous_init_subclass  # type: ignore[method-assign]
        for (cls, name), original in _originals.items():
            setattr(cls, name, original)
        _originals.clear()
        _enabled = False


def enabled() -> bool:
    return _enabled


def _on_subclass(cls: type[VectorStore], /, **kwargs: Any) -> None:
    if _previous_init_subclass is not None:
        _previous_init_subclass.__get__(None, cls)(**kwargs)
    else:
        super(VectorStore, cls).__init_subclass__(**kwargs)
    with _lock:
        if _enabled:
            _wrap_class(cls)


def _wrap_class(cls: type) -> None:
    """Wrap the search methods ``cls`` itself defines (inherited ones are wrapped
    where they are defined)."""
    for name in METHODS:
        method = cls.__dict__.get(name)
        if (not inspect.isfunction(method) or hasattr(method, _ORIGINAL)
                or getattr(method, "__isabstractmethod__", False)):
            continue
        try:
            wrapper = _async_wrapper(method, name) if inspect.iscoroutinefunction(method) \
                else _sync_wrapper(method, name)
            setattr(cls, name, wrapper)
        except Exception as exc:  # a class that refuses new attributes
            record_internal_error("langchain.vector_store_wrap", exc)
            continue
        _originals[(cls, name)] = method


def _sync_wrapper(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def search(self: Any, *args: Any, **kwargs: Any) -> Any:
        if var_child_runnable_config.get() is None or _searching.get():
            return method(self, *args, **kwargs)
        started = _start(self, name, args, kwargs)
        token = _searching.set(True)
        try:
            result = method(self, *args, **kwargs)
        except BaseException as exc:
            _searching.reset(token)
            _end(started, None, exc)
            raise
        _searching.reset(token)
        _end(started, result, None)
        return result

    setattr(search, _ORIGINAL, method)
    return search


def _async_wrapper(method: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(method)
    async def search(self: Any, *args: Any, **kwargs: Any) -> Any:
        if var_child_runnable_config.get() is None or _searching.get():
            return await method(self, *args, **kwargs)
        started = _start(self, name, args, kwargs)
        token = _searching.set(True)
        try:
            result = await method(self, *args, **kwargs)
        except BaseException as exc:
            _searching.reset(token)
            _end(started, None, exc)
            raise
        _searching.reset(token)
        _end(started, result, None)
        return result

    setattr(search, _ORIGINAL, method)
    return search


_Started = tuple[list[Any], UUID, UUID] | None


def _start(store: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Started:
    """Report the search's start to the current run's ``RagasCallbackHandler``(s);
    None when there is none (or on any failure of ours)."""
    try:
        config = var_child_runnable_config.get()
        manager = config.get("callbacks") if config is not None else None
        parent = getattr(manager, "parent_run_id", None)
        if parent is None or _handler_type is None:
            return None
        handlers = [h for h in getattr(manager, "handlers", ())
                    if isinstance(h, _handler_type) and h.captures_vector_stores]
        current = _retriever.get()
        if not handlers or (current is not None and current[2] == parent.int
                            and current[0] in handlers and current[0].run_is_open(current[1])):
            return None
        query = None
        if not name.endswith("_by_vector"):
            query = args[0] if args else kwargs.get("query")
        run_id = uuid4()
        run_name = f"{type(store).__name__}.{name}"
        for handler in handlers:
            handler.on_retriever_start(None, query, run_id=run_id, parent_run_id=parent,
                                       name=run_name)
        return handlers, run_id, parent
    except Exception as exc:
        record_internal_error("langchain.vector_store_search", exc)
        return None


def _end(started: _Started, result: Any, error: BaseException | None) -> None:
    if started is None:
        return
    handlers, run_id, parent = started
    docs: list[Document] = []
    scores = None
    if error is None:
        try:
            docs, scores = documents_and_scores(result)
        except Exception as exc:  # the run is still ended, without its passages
            record_internal_error("langchain.vector_store_search", exc)
    # The handler's callbacks catch and count their own failures.
    for handler in handlers:
        if error is not None:
            handler.on_retriever_error(error, run_id=run_id, parent_run_id=parent)
        else:
            handler.on_retriever_end(docs, run_id=run_id, parent_run_id=parent,
                                     **{SCORES: scores})


def documents_and_scores(result: Any) -> tuple[list[Document], list[float] | None]:
    """The Documents of a search result (a list of Documents, or of ``(Document,
    score)`` pairs), and the scores when there are any."""
    docs: list[Document] = []
    scores: list[float] = []
    for item in result if isinstance(result, Sequence) else ():
        if isinstance(item, Document):
            docs.append(item)
        elif (type(item) is tuple and len(item) == 2 and isinstance(item[0], Document)
              and isinstance(item[1], int | float) and not isinstance(item[1], bool)):
            docs.append(item[0])
            scores.append(float(item[1]))
    return docs, scores if scores and len(scores) == len(docs) else None


def score_attributes(attrs: dict[str, Any], scores: Sequence[float]) -> None:
    """``document.score`` for each passage ``attrs`` records."""
    for i, score in enumerate(scores):
        if sc.document_key(i, sc.DOCUMENT_CONTENT) not in attrs:
            break
        attrs[sc.document_key(i, sc.DOCUMENT_SCORE)] = score


def retriever_started(handler: RagasCallbackHandler, run_id: int,
                      parent_run_id: int | None) -> None:
    """An outermost retriever run started in this context: the searches it makes
    are its own (the handler does not call this for a retriever inside one)."""
    _retriever.set((handler, run_id, parent_run_id))
