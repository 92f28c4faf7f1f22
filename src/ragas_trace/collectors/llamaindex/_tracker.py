"""LlamaIndex dispatcher spans -> our OpenTelemetry spans.

One CHAIN root per engine request (``query``/``aquery`` of a query engine,
``chat``/``achat``/``stream_chat``/``astream_chat`` of a chat engine), a RETRIEVER
span per outermost ``retrieve`` and an LLM span per outermost LLM call. Every other
dispatcher span only maps to its nearest captured ancestor; LLM calls nested in an
LLM call (``acomplete`` -> ``complete``, ``astream`` -> ``stream_complete``) collapse
into one span, so the completion-end event that fires on each of them lands on it.

A streamed request ends when its stream does: the query stream is wrapped (see
``_streams``); a chat stream ends when LlamaIndex's own writer, which consumes the
LLM stream into the chat history, exits. Requests that never end are evicted after
``run_ttl_s``, and at most ``max_open_runs`` are kept, oldest evicted first.

Thread safety: single ``dict`` reads and writes are atomic; multi-step changes
(ending a span once, the request table, chat-stream hand-off) take ``_lock``."""

from __future__ import annotations

import enum
import inspect
import threading
import time
import weakref
from collections.abc import Mapping
from functools import partial
from itertools import chain
from typing import Any, cast

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.base.llms.types import ChatResponse, CompletionResponse
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.chat_engine.types import BaseChatEngine, StreamingAgentChatResponse
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.collectors import _attributes as attributes
from ragas_trace.collectors.llamaindex import _values as values
from ragas_trace.collectors.llamaindex._streams import (
    STREAM_ABANDONED,
    STREAM_COMPLETED,
    STREAM_ERROR,
    STREAM_PARENT,
    wrap_async_stream,
    wrap_stream,
)

FRAMEWORK = "llamaindex"


class Role(enum.Enum):
    OTHER = 0
    QUERY_ENGINE = 1
    CHAT_ENGINE = 2
    RETRIEVER = 3
    LLM = 4
    CHAT_STREAM = 5
    ROOT = 6


_ENTRY_METHODS = {
    Role.QUERY_ENGINE: frozenset({"query", "aquery"}),
    Role.CHAT_ENGINE: frozenset({"chat", "achat", "stream_chat", "astream_chat"}),
}
_WRITER_METHODS = frozenset({"write_response_to_history", "awrite_response_to_history"})
_ROLE_CLASSES = (
    (BaseQueryEngine, Role.QUERY_ENGINE),
    (BaseChatEngine, Role.CHAT_ENGINE),
    (BaseRetriever, Role.RETRIEVER),
    (BaseLLM, Role.LLM),
    (StreamingAgentChatResponse, Role.CHAT_STREAM),
)
_LLM_RESPONSES = (CompletionResponse, ChatResponse)
_UUID_SUFFIX = 37  # "-" + str(uuid4())


def span_name(id_: str) -> str:
    """Dispatcher span ids are ``<Class>.<method>-<uuid4>``."""
    if len(id_) > _UUID_SUFFIX and id_[-_UUID_SUFFIX] == "-":
        return id_[:-_UUID_SUFFIX]
    return id_


class _Request:
    __slots__ = ("awaiting_writer", "deadline", "early_end", "ended", "pending_llms", "root",
                 "streaming")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.root: _Node | None = None
        self.streaming = False
        self.awaiting_writer = False
        # A chat stream's writer thread may finish before the engine call returns.
        self.early_end: tuple[str | None, BaseException | None] | None = None
        self.pending_llms: list[_Node] = []
        self.ended = False


class _Node:
    """One span we made, under the dispatcher span id ``li_id`` that started it."""

    __slots__ = ("aliases", "ctx", "ended", "instance_id", "li_id", "pending", "request",
                 "role", "span")

    def __init__(self, li_id: str, role: Role, span: Span, request: _Request) -> None:
        self.li_id = li_id
        self.role = role
        self.span = span
        self.request = request
        self.ctx: otel_context.Context | None = None
        self.aliases: list[str] = []
        self.instance_id = 0
        self.pending = False
        self.ended = False

    def child_context(self) -> otel_context.Context:
        if self.ctx is None:
            self.ctx = trace.set_span_in_context(self.span)
        return self.ctx


class Tracker:
    """The state behind one span-handler/event-handler pair."""

    def __init__(self, tracer: Tracer, app_name: str | None, tags: Mapping[str, Any] | None,
                 engines: weakref.WeakSet[Any] | None, max_documents: int,
                 document_budget: int | None, run_ttl_s: float, max_open_runs: int) -> None:
        self._tracer = tracer
        self._app_name = app_name
        self._tags = tuple(tags.items()) if tags else ()
        self._engines = engines
        self._max_documents = max_documents
        self._document_budget = document_budget
        self._run_ttl_s = run_ttl_s
        self._max_open_runs = max_open_runs
        self._open: dict[str, _Node] = {}
        self._requests: dict[str, _Node] = {}  # root id -> root, oldest first
        self._roles: dict[type, Role] = {}
        self._lock = threading.Lock()
        self.evicted_runs = 0

    @property
    def open_runs(self) -> int:
        return len(self._requests)

    @property
    def open_spans(self) -> int:
        """Dispatcher span ids currently mapped (for tests of boundedness)."""
        return len(self._open)

    # Dispatcher callbacks ------------------------------------------------------

    def enter(self, id_: str, bound_args: inspect.BoundArguments, instance: Any,
              parent_id: str | None, tags: Mapping[str, Any] | None) -> None:
        open_ = self._open
        anc = open_.get(parent_id) if parent_id is not None else None
        if anc is None:
            mark = STREAM_PARENT.get()
            if mark is not None and mark[1] == parent_id:
                anc = cast(_Node, mark[0])
        if anc is None:
            role = self._role(instance)
            if role is Role.QUERY_ENGINE or role is Role.CHAT_ENGINE:
                self._start_request(id_, role, bound_args, instance, tags)
            return
        if anc.request.ended:
            return
        role = self._role(instance)
        if role is Role.RETRIEVER and anc.role is not Role.RETRIEVER:
            open_[id_] = self._start_child(id_, Role.RETRIEVER, anc, chain(
                attributes.retriever_attributes(),
                attributes.input_attributes(values.question_of(bound_args))))
        elif role is Role.LLM:
            self._enter_llm(id_, anc, instance)
        else:
            open_[id_] = anc

    def exit(self, id_: str, instance: Any, result: Any) -> None:
        node = self._open.get(id_)
        if node is None:
            return
        if node.role is Role.LLM and isinstance(result, _LLM_RESPONSES) and not node.ended:
            # Usage from the call's own result: also covers LLMs that send no events.
            node.span.set_attributes(dict(attributes.usage_attributes(*values.usage_of(result))))
        if node.li_id != id_:
            self._leave_inner(id_, node, instance, result, None)
        elif node.role is Role.ROOT:
            self._root_returned(node, result)
        elif node.role is Role.RETRIEVER:
            try:
                node.span.set_attributes(dict(values.document_attributes_of(
                    result, self._max_documents, self._document_budget)))
            finally:
                self._end_node(node)
        elif inspect.isgenerator(result) or inspect.isasyncgen(result):
            # A streaming LLM call returns at once; it ends with its end event.
            node.pending = True
            node.request.pending_llms.append(node)
        else:
            self._end_node(node)

    def drop(self, id_: str, instance: Any, err: BaseException | None) -> None:
        node = self._open.get(id_)
        if node is None:
            return
        if node.li_id != id_:
            self._leave_inner(id_, node, instance, None, err)
        elif node.role is Role.ROOT:
            self._end_request(node, None, err)
        else:
            try:
                _record_error(node.span, err)
            finally:
                self._end_node(node)

    def llm_ended(self, span_id: str | None, response: Any) -> None:
        """A completion/chat end event: usage onto the LLM span; ends a streaming one."""
        node = self._open.get(span_id) if span_id is not None else None
        if node is None or node.role is not Role.LLM or node.ended:
            return
        try:
            node.span.set_attributes(dict(attributes.usage_attributes(*values.usage_of(response))))
        finally:
            if node.pending:
                self._end_node(node)

    def close(self) -> None:
        """End every open request (the handlers are being removed)."""
        with self._lock:
            roots = list(self._requests.values())
        for root in roots:
            self._end_request(root, None, None, STREAM_ABANDONED)

    # Requests -------------------------------------------------------------------

    def _start_request(self, id_: str, role: Role, bound_args: inspect.BoundArguments,
                       instance: Any, tags: Mapping[str, Any] | None) -> None:
        name = span_name(id_)
        if name.rpartition(".")[2] not in _ENTRY_METHODS[role]:
            return
        if otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY):
            return
        if self._tags and (tags is None or any(
                tags.get(key, _MISSING) != value for key, value in self._tags)):
            return
        if self._engines is not None and instance not in self._engines:
            return
        attrs = dict(chain(attributes.chain_attributes(name, FRAMEWORK, self._app_name),
                           attributes.input_attributes(values.question_of(bound_args))))
        span = self._tracer.start_span(name, attributes=attrs, start_time=time.time_ns())
        now = time.monotonic()
        root = _Node(id_, Role.ROOT, span, _Request(now + self._run_ttl_s))
        root.request.root = root
        self._open[id_] = root
        with self._lock:
            victims = self._victims_locked(now)
            self._requests[id_] = root
        for victim in victims:
            self._evict(victim)

    def _victims_locked(self, now: float) -> list[_Node]:
        """Requests past their deadline, then the oldest beyond ``max_open_runs - 1``
        (making room for the one being added), oldest first."""
        victims: list[_Node] = []
        requests = self._requests
        while requests:
            oldest = next(iter(requests.values()))
            if oldest.request.deadline > now and len(requests) < self._max_open_runs:
                break
            del requests[oldest.li_id]
            victims.append(oldest)
        return victims

    def _evict(self, root: _Node) -> None:
        self.evicted_runs += 1
        try:
            root.span.set_attribute(sc.RAGAS_RUN_EVICTED, True)
            root.span.set_status(Status(
                StatusCode.ERROR, f"no end within {self._run_ttl_s:g} s; evicted"))
        except Exception as exc:
            record_internal_error("llamaindex.evict", exc)
        finally:
            self._end_request(root, None, None, STREAM_ABANDONED)

    def _root_returned(self, root: _Node, result: Any) -> None:
        request = root.request
        if isinstance(result, StreamingResponse) and result.response_gen is not None:
            request.streaming = True
            result.response_gen = self._wrap(root, result.response_gen, is_async=False)
            return
        if isinstance(result, AsyncStreamingResponse) and result.response_gen is not None:
            request.streaming = True
            result.response_gen = self._wrap(root, result.response_gen, is_async=True)
            return
        if isinstance(result, StreamingAgentChatResponse):
            request.streaming = True
            if result.is_writing_to_memory:
                # LlamaIndex's writer consumes the LLM stream whatever the user does;
                # the request ends when it exits (see _leave_inner).
                with self._lock:
                    early = request.early_end
                    request.awaiting_writer = early is None
                if early is not None:
                    self._end_request(root, early[0], early[1])
                return
            if result.chat_stream is not None:
                result.chat_stream = self._wrap(root, result.chat_stream, is_async=False)
                return
            if result.achat_stream is not None:
                result.achat_stream = self._wrap(root, result.achat_stream, is_async=True)
                return
        self._end_request(root, values.answer_of(result), None)

    def _wrap(self, root: _Node, inner: Any, is_async: bool) -> Any:
        finish = partial(self._stream_finished, root)
        wrapper = (wrap_async_stream(inner, root, finish) if is_async
                   else wrap_stream(inner, root, finish))
        # A stream dropped unread never runs its wrapper's ``finally``: end the
        # request when the wrapper is collected (a no-op if it already ended).
        weakref.finalize(wrapper, finish, [], STREAM_ABANDONED, None).atexit = False
        return wrapper

    def _stream_finished(self, root: _Node, parts: list[str], status: str,
                         error: BaseException | None) -> None:
        try:
            answer = "".join(parts) if parts or status == STREAM_COMPLETED else None
            self._end_request(root, answer, error, status)
        except Exception as exc:
            record_internal_error("llamaindex.stream_end", exc)

    def _leave_inner(self, id_: str, node: _Node, instance: Any, result: Any,
                     err: BaseException | None) -> None:
        """Exit or drop of a dispatcher span mapped onto an ancestor's span."""
        if node.role is not Role.LLM or id_ not in node.aliases:
            # LLM aliases stay mapped until the LLM span ends: end events name them.
            self._open.pop(id_, None)
        if (self._role(instance) is Role.CHAT_STREAM
                and span_name(id_).rpartition(".")[2] in _WRITER_METHODS):
            request = node.request
            answer = values.answer_of(instance) if err is None else None
            with self._lock:
                ready = request.awaiting_writer
                if not ready:
                    request.early_end = (answer, err)
            if ready and request.root is not None:
                self._end_request(request.root, answer, err)

    def _end_request(self, root: _Node, answer: str | None, err: BaseException | None,
                     stream_status: str | None = None) -> None:
        request = root.request
        with self._lock:
            if request.ended:
                return
            request.ended = True
            root.ended = True
            self._requests.pop(root.li_id, None)
        self._open.pop(root.li_id, None)
        span = root.span
        try:
            attrs = dict(attributes.output_attributes(answer))
            if request.streaming:
                if stream_status is None:
                    stream_status = STREAM_ERROR if err is not None else STREAM_COMPLETED
                attrs[sc.RAGAS_STREAM_STATUS] = stream_status
            span.set_attributes(attrs)
            if err is not None and not isinstance(err, GeneratorExit):
                _record_error(span, err)
        finally:
            for llm in request.pending_llms:
                self._end_node(llm)
            span.end(time.time_ns())

    # Children -------------------------------------------------------------------

    def _start_child(self, id_: str, role: Role, parent: _Node,
                     attrs: Any) -> _Node:
        span = self._tracer.start_span(span_name(id_), parent.child_context(),
                                       attributes=dict(attrs), start_time=time.time_ns())
        return _Node(id_, role, span, parent.request)

    def _enter_llm(self, id_: str, anc: _Node, instance: Any) -> None:
        target = anc if anc.role is Role.LLM else None
        if target is None:
            key = id(instance)
            for pending in anc.request.pending_llms:
                # A streaming LLM that runs a nested stream lazily, after returning.
                if pending.instance_id == key and not pending.ended:
                    target = pending
                    break
        if target is not None:
            target.aliases.append(id_)
            self._open[id_] = target
            return
        node = self._start_child(id_, Role.LLM, anc, attributes.llm_attributes(
            values.model_of(instance), values.provider_of(instance), None, None))
        node.instance_id = id(instance)
        self._open[id_] = node

    def _end_node(self, node: _Node) -> None:
        with self._lock:
            if node.ended:
                return
            node.ended = True
        open_ = self._open
        open_.pop(node.li_id, None)
        for alias in node.aliases:
            open_.pop(alias, None)
        node.span.end(time.time_ns())

    def _role(self, instance: Any) -> Role:
        cls = type(instance)
        role = self._roles.get(cls)
        if role is None:
            role = next((r for base, r in _ROLE_CLASSES if issubclass(cls, base)), Role.OTHER)
            self._roles[cls] = role
        return role


_MISSING = object()


def _record_error(span: Span, err: BaseException | None) -> None:
    if err is None:
        return
    span.record_exception(err)
    span.set_status(Status(StatusCode.ERROR, f"{type(err).__name__}: {err}"))
