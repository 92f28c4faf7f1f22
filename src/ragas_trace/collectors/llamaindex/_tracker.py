"""LlamaIndex dispatcher spans -> our OpenTelemetry spans.

One CHAIN root per request: ``query``/``aquery`` of a query engine,
``chat``/``achat``/``stream_chat``/``astream_chat`` of a chat engine, or the ``run``
of a workflow (agents such as ``FunctionAgent`` are workflows), whichever is
outermost; a RETRIEVER span per outermost ``retrieve``, a RERANKER span per outermost
node postprocessor call (its output: what the synthesizer is given), a TOOL span per
outermost tool call and an LLM span per outermost LLM call (with its messages, from
the LLM start/end events). Workflow steps run as asyncio tasks created inside the
run, so they inherit the run's context variables, ``CURRENT`` included. A step makes
no span; ``NodeWithScore``s in its output event that no retriever span of the run
recorded get a RETRIEVER span of their own. A synthesizer given a choice among the
nodes last recorded that is not those nodes (made without a span) gets a RERANKER
span with it. Every other
dispatcher span is ignored at the cost of one dict lookup: the enclosing span of ours
is found through a context variable (``CURRENT``), not through a map of every open
dispatcher span. LLM calls nested in an LLM call (``acomplete`` -> ``complete``,
``astream`` -> a lazily run ``stream_complete``) collapse into one span, so the
completion-end event that fires on each of them lands on it.

The callbacks only record; a request's spans are made in one burst when it ends,
each with its own start and end times and all its attributes in one SDK call (the
root first, so processors see its kind and question in ``on_start``), as the
LangChain collector does. A call still open then (an abandoned stream's LLM) gets
its span in the burst, ended at the request's end.

A streamed request ends when its stream does: the query stream is wrapped (see
``_streams``); a chat stream ends when LlamaIndex's own writer, which consumes the
LLM stream into the chat history, exits. Requests that never end are evicted after
``run_ttl_s``, and at most ``max_open_runs`` are kept, oldest evicted first.

Thread safety: single ``dict`` operations are atomic; multi-step changes (ending a
span once, the request table, chat-stream hand-off) take ``_lock``."""

from __future__ import annotations

import inspect
import itertools
import operator
import time
import weakref
from collections.abc import Mapping
from functools import partial
from typing import Any

from llama_index.core.base.llms.types import ChatResponse, CompletionResponse
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.chat_engine.types import StreamingAgentChatResponse
from llama_index.core.workflow import Event, StopEvent
from llama_index_instrumentation.dispatcher import active_instrument_tags
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.collectors import _attributes as attributes
from ragas_trace.collectors.llamaindex import _agent_values as agent_values
from ragas_trace.collectors.llamaindex import _in_prompt
from ragas_trace.collectors.llamaindex import _values as values
from ragas_trace.collectors.llamaindex._nodes import (
    CHAT_ENGINE,
    CHAT_STREAM,
    CURRENT,
    LLM,
    POSTPROCESSOR,
    QUERY_ENGINE,
    RETRIEVER,
    ROOT,
    STEP,
    SYNTHESIZER,
    TOOL,
    WORKFLOW,
    Node,
    Request,
    method_of,
    role_of_class,
    span_name,
)
from ragas_trace.collectors.llamaindex._spans import SpanBook, record_error
from ragas_trace.collectors.llamaindex._streams import wrap_async_stream, wrap_stream

FRAMEWORK = "llamaindex"
_ENTRY_METHODS = {
    QUERY_ENGINE: frozenset({"query", "aquery"}),
    CHAT_ENGINE: frozenset({"chat", "achat", "stream_chat", "astream_chat"}),
    WORKFLOW: frozenset({"run"}),
}
_ROOT_ROLES = frozenset(_ENTRY_METHODS)
_WRITER_METHODS = frozenset({"write_response_to_history", "awrite_response_to_history"})
_LLM_RESPONSES = (CompletionResponse, ChatResponse)
_MISSING = object()
_MAX_CACHED = 1024  # distinct engine names / LLM models whose attributes are cached
_RETRIEVER_ATTRS = dict(attributes.retriever_attributes())
_RERANKER_ATTRS = dict(attributes.reranker_attributes())
# The span DispatcherSpanMixin puts on every postprocessor's implementation.
_POSTPROCESS_METHODS = frozenset({"_postprocess_nodes", "_apostprocess_nodes"})
_SYNTHESIZE_METHODS = frozenset({"synthesize", "asynthesize"})
# Inside these, a postprocessor's output is part of what they return.
_NO_RERANKER_UNDER = frozenset({RETRIEVER, POSTPROCESSOR})
# The RERANKER span of the passages the answering prompt shows (``_in_prompt``).
_PROMPT_PASSAGES = "passages in prompt"


class Tracker(SpanBook):
    """The state behind one span-handler/event-handler pair. The handlers look up the
    role of each span's object in ``roles`` and call in only for the roles that matter."""

    def __init__(self, tracer: Tracer, app_name: str | None, tags: Mapping[str, Any] | None,
                 engines: weakref.WeakSet[Any] | None, max_documents: int,
                 document_budget: int | None, run_ttl_s: float, max_open_runs: int) -> None:
        super().__init__(tracer)
        self._app_name = app_name
        self._tags = tuple(tags.items()) if tags else ()
        self._engines = engines
        self._documents = attributes.DocumentAttributes(
            values.write_document, "llamaindex.document", max_documents, document_budget)
        self._reranked = attributes.DocumentAttributes(
            values.write_document, "llamaindex.reranked_document", max_documents,
            document_budget, sc.RERANKER_OUTPUT_DOCUMENTS)
        # Attributes that only depend on the span's name / the LLM's class and model.
        self._chain_attrs: dict[str, dict[str, Any]] = {}
        self._llm_attrs: dict[tuple[str | None, str | None], dict[str, Any]] = {}
        self._run_ttl_s = run_ttl_s
        self._max_open_runs = max_open_runs
        self.roles: dict[type, int] = {}
        self._requests: dict[str, Node] = {}  # root id -> root, oldest first
        self.evicted_runs = 0

    @property
    def open_runs(self) -> int:
        return len(self._requests)

    @property
    def open_spans(self) -> int:
        """Streaming LLM calls waiting for their end event (for tests of boundedness)."""
        return len(self._pending)

    def role(self, instance: Any) -> int:
        cls = type(instance)
        role = self.roles.get(cls)
        if role is None:
            role = self.roles[cls] = role_of_class(cls)
        return role

    # Dispatcher callbacks (only for spans whose object has a role) ---------------

    def enter(self, id_: str, bound_args: inspect.BoundArguments, instance: Any, role: int,
              tags: Mapping[str, Any] | None) -> None:
        current = CURRENT.get()
        if current is None or current.request.ended:
            if role in _ROOT_ROLES:
                self._start_request(id_, role, bound_args, instance, tags)
        elif role == STEP:
            return
        elif role == RETRIEVER:
            if current.role != RETRIEVER:
                attrs = dict(_RETRIEVER_ATTRS)
                attrs.update(attributes.input_attributes(values.question_of(bound_args)))
                self._push(Node(id_, RETRIEVER, None, current.request, current, attrs))
        elif role == POSTPROCESSOR:
            # A node postprocessor or reranker: what it returns, not what was retrieved,
            # is what the synthesizer is given (and ``Response.source_nodes`` shows).
            if (current.role not in _NO_RERANKER_UNDER
                    and method_of(id_) in _POSTPROCESS_METHODS):
                self._push(Node(id_, POSTPROCESSOR, None, current.request, current,
                                dict(_RERANKER_ATTRS)))
        elif role == SYNTHESIZER:
            last = current.last_nodes
            # An engine without postprocessors passes its retriever's list on: the
            # common case costs these two reads.
            if last is not None and (nodes := bound_args.arguments.get("nodes")) is not last:
                self._synthesizer_nodes(id_, current, last, nodes)
        elif role == LLM:
            # Private helpers (``_prepare_chat_with_tools``) are no model call.
            if current.role == LLM or not method_of(id_).startswith("_"):
                self._enter_llm(id_, current, instance)
        elif role == TOOL and current.role != TOOL:  # acall -> call: one span
            self._enter_tool(id_, current, instance, bound_args)
        # An engine or workflow run inside a request stays part of it, without a span.

    def exit(self, id_: str, instance: Any, role: int, result: Any) -> None:
        node = CURRENT.get()
        if node is None:
            return
        if node.li_id != id_:
            if role == LLM and node.role == LLM:
                if isinstance(result, _LLM_RESPONSES) and not node.ended:
                    # Usage from the call's own result: also covers LLMs without events.
                    self._add(node, attributes.usage_attributes(*values.usage_of(result)))
            elif role == CHAT_STREAM and method_of(id_) in _WRITER_METHODS:
                self._writer_done(node.request, instance, None)
            elif role == STEP and node.request.passage_ids is not None and isinstance(
                    result, Event):
                self._found_passages(id_, node, result)
            return
        self._pop(node)
        if node.role == ROOT:
            self._root_returned(node, result)
        elif node.role == RETRIEVER:
            try:
                self._add_documents(node, self._documents, result)
                if isinstance(result, list) and node.parent is not None:
                    node.parent.last_nodes = result
                seen = node.request.passage_ids
                if seen is not None and isinstance(result, list):
                    seen.update(filter(None, map(agent_values.node_id, result)))
            finally:
                self._end_node(node)
        elif node.role == POSTPROCESSOR:
            try:
                self._add_documents(node, self._reranked, result)
                if isinstance(result, list) and node.parent is not None:
                    node.parent.last_nodes = result
            finally:
                self._end_node(node)
        elif node.role == TOOL:
            try:
                self._tool_returned(node, result)
            finally:
                self._end_node(node)
        elif inspect.isgenerator(result) or inspect.isasyncgen(result):
            # A streaming LLM call returns at once; it ends with its end event.
            node.pending = True
            node.request.pending_llms.append(node)
            self._pending[node.li_id] = node
            for alias in node.aliases:
                self._pending[alias] = node
        else:
            if isinstance(result, _LLM_RESPONSES):
                self._add(node, attributes.usage_attributes(*values.usage_of(result)))
            self._end_node(node)

    def _add_documents(self, node: Node, book: attributes.DocumentAttributes,
                       result: Any) -> None:
        if node.attrs is not None:
            book.add(node.attrs, result)
        else:
            # Its span was made early, as the parent of a model call (``LLMRerank``).
            docs: dict[str, Any] = {}
            book.add(docs, result)
            self._span_of(node).set_attributes(docs)

    def _synthesizer_nodes(self, id_: str, current: Node, last: list[Any], nodes: Any) -> None:
        """The nodes a synthesizer is given, when they are not the ones the request's
        latest RETRIEVER / RERANKER span recorded (a postprocessor without a span of its
        own, such as ``LLMRerank``'s async path, or an engine's own filtering): a
        RERANKER span named after the synthesizer call holds them, if they are a choice
        among those (the same node objects)."""
        if (current.role in _NO_RERANKER_UNDER or not isinstance(nodes, list)
                or method_of(id_) not in _SYNTHESIZE_METHODS):
            return
        if len(nodes) == len(last) and all(map(operator.is_, nodes, last)):
            return
        known = {id(getattr(n, "node", n)) for n in last}
        if not all(id(getattr(n, "node", n)) in known for n in nodes):
            # New nodes (a sub-question engine's answers, citation chunks): text made
            # from the passages, not a choice among them; the passages stay scored.
            return
        current.last_nodes = nodes
        attrs = dict(_RERANKER_ATTRS)
        self._reranked.add(attrs, nodes)
        self._end_node(Node(id_, POSTPROCESSOR, None, current.request, current, attrs))

    def drop(self, id_: str, instance: Any, role: int, err: BaseException | None) -> None:
        node = CURRENT.get()
        if node is None:
            return
        if node.li_id != id_:
            if role == CHAT_STREAM and method_of(id_) in _WRITER_METHODS:
                self._writer_done(node.request, instance, err)
            return
        self._pop(node)
        if node.role == ROOT:
            self._end_request(node, None, err)
            return
        node.error = err
        self._end_node(node)

    def llm_started(self, event: Any) -> None:
        """A chat/completion start event, inside the LLM call's span: its prompt."""
        node = CURRENT.get()
        if node is None or node.role != LLM or node.has_input or node.ended:
            return
        node.has_input = True
        self._add(node, attributes.message_attributes(
            "input", agent_values.input_messages(event)))

    def llm_ended(self, span_id: str | None, response: Any) -> None:
        """A completion/chat end event: the completion; it ends a streaming LLM call,
        with its usage (a call that returned a response ends when its span does)."""
        node = CURRENT.get()
        if node is not None and node.role == LLM and not node.ended:
            self._add(node, attributes.message_attributes(
                "output", agent_values.output_messages(response)))
            return
        node = self._pending.get(span_id) if span_id is not None else None
        if node is None or node.ended:
            return
        try:
            self._add(node, itertools.chain(
                attributes.usage_attributes(*values.usage_of(response)),
                attributes.message_attributes(
                    "output", agent_values.output_messages(response))))
        finally:
            self._end_node(node)

    def close(self) -> None:
        """End every open request (the handlers are being removed)."""
        with self._lock:
            roots = list(self._requests.values())
        for root in roots:
            self._end_request(root, None, None, sc.STREAM_ABANDONED)

    # Requests -------------------------------------------------------------------

    def _start_request(self, id_: str, role: int, bound_args: inspect.BoundArguments,
                       instance: Any, tags: Mapping[str, Any] | None) -> None:
        name = span_name(id_)
        if name.rpartition(".")[2] not in _ENTRY_METHODS[role]:
            return
        if otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY):
            return
        if self._tags:
            if tags is None:
                # llama-index-workflows enters a run's span without its tags.
                tags = active_instrument_tags.get()
            for key, value in self._tags:
                if tags.get(key, _MISSING) != value:
                    return
        if self._engines is not None and instance not in self._engines:
            return
        base = self._chain_attrs.get(name)
        if base is None:
            base = dict(attributes.chain_attributes(name, FRAMEWORK, self._app_name))
            if len(self._chain_attrs) < _MAX_CACHED:
                self._chain_attrs[name] = base
        attrs = dict(base)
        request = Request(time.monotonic() + self._run_ttl_s)
        if role == WORKFLOW:
            request.passage_ids = set()
            attrs.update(attributes.input_attributes(agent_values.question_of_run(bound_args)))
            attrs.update(attributes.session_attributes(agent_values.session_of_run(bound_args)))
        else:
            attrs.update(attributes.input_attributes(values.question_of(bound_args)))
            if role == CHAT_ENGINE:
                attrs.update(attributes.session_attributes(
                    agent_values.session_of_memory(getattr(instance, "_memory", None))))
        now = time.monotonic()
        root = Node(id_, ROOT, None, request, None, attrs)
        root.parent_ctx = otel_context.get_current()
        request.root = root
        with self._lock:
            victims = self._victims_locked(now)
            self._requests[id_] = root
        self._push(root)
        for victim in victims:
            self._evict(victim)

    def _victims_locked(self, now: float) -> list[Node]:
        """Requests past their deadline, then the oldest beyond ``max_open_runs - 1``
        (making room for the one being added), oldest first."""
        victims: list[Node] = []
        requests = self._requests
        while requests:
            oldest = next(iter(requests.values()))
            if oldest.request.deadline > now and len(requests) < self._max_open_runs:
                break
            del requests[oldest.li_id]
            victims.append(oldest)
        return victims

    def _evict(self, root: Node) -> None:
        self.evicted_runs += 1
        self._end_request(root, None, None, sc.STREAM_ABANDONED, evicted=True)

    def _root_returned(self, root: Node, result: Any) -> None:
        request = root.request
        if isinstance(result, StopEvent):
            try:
                self._found_passages(root.li_id, root, result)
            except Exception as exc:
                record_internal_error("llamaindex.stop_event", exc)
            result = agent_values.result_of_stop(result)
            if not isinstance(result, StreamingResponse | AsyncStreamingResponse):
                self._end_request(root, agent_values.answer_of_result(result), None)
                return
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
                # the request ends when it exits (see _writer_done).
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

    def _wrap(self, root: Node, inner: Any, is_async: bool) -> Any:
        finish = partial(self._stream_finished, root)
        wrapper = (wrap_async_stream(inner, root, finish) if is_async
                   else wrap_stream(inner, root, finish))
        # A stream dropped unread never runs its wrapper's ``finally``: end the
        # request when the wrapper is collected (a no-op if it already ended).
        weakref.finalize(wrapper, finish, [], sc.STREAM_ABANDONED, None).atexit = False
        return wrapper

    def _stream_finished(self, root: Node, parts: list[str], status: str,
                         error: BaseException | None) -> None:
        try:
            answer = "".join(parts) if parts or status == sc.STREAM_COMPLETED else None
            self._end_request(root, answer, error, status)
        except Exception as exc:
            record_internal_error("llamaindex.stream_end", exc)

    def _writer_done(self, request: Request, instance: Any, err: BaseException | None) -> None:
        """LlamaIndex's chat-stream writer exited: the chat answer is complete."""
        answer = values.answer_of(instance) if err is None else None
        with self._lock:
            ready = request.awaiting_writer
            if not ready:
                request.early_end = (answer, err)
        if ready and request.root is not None:
            self._end_request(request.root, answer, err)

    def _end_request(self, root: Node, answer: str | None, err: BaseException | None,
                     stream_status: str | None = None, evicted: bool = False) -> None:
        """End the request and make its spans in one burst: the SDK's span code runs
        hot in the cache three times in a row instead of cold at three points of the
        query (measured: about 3x cheaper on the bench's 2-core machine)."""
        request = root.request
        with self._lock:
            if request.ended:
                return
            request.ended = True
            root.ended = True
            self._requests.pop(root.li_id, None)
            done, request.done = request.done, []
            pending, request.pending_llms = request.pending_llms, []
        end_ns = time.time_ns()
        span: Span | None = None
        try:
            if not any(node.role == RETRIEVER for node in done):
                done.extend(self._tool_passages(done))
            attrs = dict(attributes.output_attributes(answer))
            if err is None and not evicted:
                self._choose_passages(root, done, pending, answer, attrs)
            if request.streaming:
                if stream_status is None:
                    stream_status = sc.STREAM_ERROR if err is not None else sc.STREAM_COMPLETED
                attrs[sc.RAGAS_STREAM_STATUS] = stream_status
            if evicted:
                attrs[sc.RAGAS_RUN_EVICTED] = True
            self._add(root, attrs.items())
            span = self._span_of(root)
            if evicted:
                span.set_status(Status(
                    StatusCode.ERROR, f"no end within {self._run_ttl_s:g} s; evicted"))
            if err is not None and not isinstance(err, GeneratorExit):
                record_error(span, err)
        finally:
            for node in done:
                self._finish_span(node)
            for llm in pending:
                self._end_node(llm, end_ns)
            # Break the request <-> root cycle: left to the cyclic GC, every request's
            # spans would make collections (of the app's whole heap) more frequent.
            request.root = None
            (span or self._span_of(root)).end(end_ns)

    def _choose_passages(self, root: Node, done: list[Node], pending: list[Node],
                         answer: str | None, attrs: dict[str, Any]) -> None:
        """Leave out the passages the answering call was not given (``_in_prompt``): a
        RERANKER span under the root holds those it shows, when that is needed."""
        try:
            choice = _in_prompt.choose(done + pending if pending else done, answer)
            if choice is None:
                return
            if choice.source is not None:
                attrs[sc.RAGAS_PASSAGES_SOURCE] = choice.source
            if choice.attrs is not None:
                shown = dict(_RERANKER_ATTRS)
                shown.update(choice.attrs)
                node = Node(root.li_id, POSTPROCESSOR, None, root.request, root, shown)
                node.name = _PROMPT_PASSAGES
                node.start_ns = node.end_ns = choice.start_ns
                node.ended = True
                done.append(node)
        except Exception as exc:
            record_internal_error("llamaindex.passages_in_prompt", exc)

    # Workflows and tools ----------------------------------------------------------

    def _enter_tool(self, id_: str, current: Node, instance: Any,
                    bound_args: inspect.BoundArguments) -> None:
        name, description = agent_values.tool_identity(instance)
        attrs = dict(attributes.tool_attributes(name, description))
        arguments = agent_values.tool_input(bound_args)
        if arguments is not None:
            attrs[sc.INPUT_VALUE] = arguments
            attrs[sc.INPUT_MIME_TYPE] = sc.MIME_JSON
        node = Node(id_, TOOL, None, current.request, current, attrs)
        node.name = name
        self._push(node)

    def _tool_returned(self, node: Node, result: Any) -> None:
        text, is_error = agent_values.tool_output(result)
        self._add(node, attributes.output_attributes(text))
        if is_error:
            node.error = RuntimeError(text or "tool call failed")
        if node.request.passage_ids is not None:
            self._found_passages(node.li_id, node, result)

    def _tool_passages(self, done: list[Node]) -> list[Node]:
        """For a request that recorded no passages: the text each tool call returned
        (a function tool that calls a search API or formats nodes itself) is what the
        agent answered from, so it is a passage, under its tool's span."""
        found: list[Node] = []
        for tool in done:
            attrs = tool.attrs
            if tool.role != TOOL or tool.error is not None or attrs is None:
                continue
            text = attrs.get(sc.OUTPUT_VALUE)
            if type(text) is not str or not text.strip():
                continue
            passage = dict(_RETRIEVER_ATTRS)
            passage.update(attributes.input_attributes(
                agent_values.only_argument(attrs.get(sc.INPUT_VALUE))))
            self._documents.add(passage, [text])
            node = Node(tool.li_id, RETRIEVER, None, tool.request, tool, passage)
            node.name = tool.name
            node.start_ns, node.end_ns, node.ended = tool.start_ns, tool.end_ns, True
            found.append(node)
        return found

    def _found_passages(self, id_: str, parent: Node, value: Any) -> None:
        """Passages a workflow step wrote into its output event, or a tool returned,
        that no retriever span of the request recorded: a RETRIEVER span of their own,
        named after the step, ending as it returns."""
        seen = parent.request.passage_ids
        if seen is None:
            return
        new = []
        for item in agent_values.passages_in(value):
            key = agent_values.node_id(item)
            if key is None or key not in seen:
                new.append(item)
                if key is not None:
                    seen.add(key)
        if not new:
            return
        attrs = dict(_RETRIEVER_ATTRS)
        self._documents.add(attrs, new)
        node = Node(id_, RETRIEVER, None, parent.request, parent, attrs)
        self._end_node(node)

    # LLM calls ------------------------------------------------------------------

    def _enter_llm(self, id_: str, current: Node, instance: Any) -> None:
        if current.role == LLM:
            current.aliases.append(id_)
            return
        key = id(instance)
        for pending in current.request.pending_llms:
            # A streaming LLM that runs a nested stream lazily, after returning.
            if pending.instance_id == key and not pending.ended:
                pending.aliases.append(id_)
                self._pending[id_] = pending
                return
        key_attrs = (values.model_of(instance), values.provider_of(instance))
        base = self._llm_attrs.get(key_attrs)
        if base is None:
            base = dict(attributes.llm_attributes(*key_attrs, None, None))
            if len(self._llm_attrs) < _MAX_CACHED:
                self._llm_attrs[key_attrs] = base
        node = Node(id_, LLM, None, current.request, current, dict(base))
        node.instance_id = key
        self._push(node)
