"""``RagasCallbackHandler``: one OpenTelemetry trace per LangChain root run.

Spans are made for the root run (CHAIN, with question, answer and the conversation
id as ``session.id``), each retriever run (RETRIEVER, with its passages), each tool
call (TOOL, with its input and output) and each model call (LLM, with model, token
usage, prompt and completion messages). A direct vector-store search reaches
the handler as a retriever run too (``_vector_stores`` wraps the search methods).
Passages that arrive without a retriever run (a tool's artifact, Documents a graph
node writes into its state) get a RETRIEVER span too; a step that is given
Documents and returns a strict subset of them (a filter, cut-off or reranker) gets a
RERANKER span with what it kept, which is what reaches the prompt; a request with no passages at
all takes those of the state it returns (a resumed graph), else its tools' text
outputs. A retriever inside a retriever makes no span: the outer one's documents are
what the app got. Every other run only maps to its nearest spanned ancestor. The
callbacks record; the spans are made when the root run ends (``_emit``). Each
callback is wrapped so that nothing raises into the chain, and a run is ended even
when building its attributes fails. A cancelled request (its root's error is a
``CancelledError``, or the asyncio task it started in was cancelled with the root
still open) ends at once, with every run still open in it: langchain-core sends
those runs no end or error event."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables.config import var_child_runnable_config
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.sdk.trace import SpanLimits
from opentelemetry.trace import TracerProvider

from ragas_trace import _app_names
from ragas_trace import semconv as sc
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.collectors import _attributes as attributes
from ragas_trace.collectors import _settings
from ragas_trace.collectors.langchain import (
    _discards,
    _found_documents,
    _in_prompt,
    _span_attributes,
    _values,
    _vector_stores,
)
from ragas_trace.collectors.langchain._emit import Emitter
from ragas_trace.collectors.langchain._runs import Run, RunMap

FRAMEWORK = "langchain"
_SCOPE = "ragas_trace.collectors.langchain"
# Attributes a retriever span carries besides its documents (kind, operation,
# query and its mime type, documents_total), plus headroom for sampler attributes.
_RETRIEVER_BASE_ATTRIBUTES = 8
_ATTRIBUTE_CACHE_SIZE = 256
# Steps and tools looked through above a retrieval (a guard: trees are shallower).
_MAX_LINEAGE = 64
_DOCUMENT_KEYS = sc.RETRIEVAL_DOCUMENTS + "."
# The RERANKER span of the passages the answering prompt shows (``_in_prompt``).
_PROMPT_PASSAGES = "passages in prompt"
_Build = Callable[[Any], dict[str, Any]]


_RETRIEVER_ATTRIBUTES: dict[str, Any] = dict(attributes.retriever_attributes())
_RERANKER_ATTRIBUTES: dict[str, Any] = dict(attributes.reranker_attributes())


class RagasCallbackHandler(BaseCallbackHandler):
    """Turns each LangChain request into a trace whose spans carry what Ragas scores.

    ``tracer_provider``: where spans go (default: the global provider).
    ``app_name``: recorded as ``ragas.app.name``, the ``app`` label of the score
    metrics (default: none; the label is then the ``app_name`` setting; run names
    stay span names, never label values).
    ``max_documents``: passages recorded per retriever span (env
    ``RAGAS_TRACE_MAX_DOCUMENTS``, default 100; fewer when the span attribute limit
    would be exceeded, with the true count in ``ragas.retrieval.documents_total``).
    ``run_ttl_s``: requests still open after this long are ended and forgotten
    (env ``RAGAS_TRACE_RUN_TTL_S``, default 600). ``max_open_runs``: open runs kept
    at most (env ``RAGAS_TRACE_MAX_OPEN_RUNS``, default 10,000), oldest evicted first.
    ``capture_vector_stores``: record ``vector_store.similarity_search*`` calls made
    inside a traced run as retriever spans (env ``RAGAS_TRACE_CAPTURE_VECTOR_STORES``,
    default on; the first handler made with it on wraps the search methods of every
    ``VectorStore`` class, ``_vector_stores``).
    """

    # A sync handler under ainvoke would otherwise be run in an executor thread
    # per event; our callbacks are short and never block.
    run_inline = True
    raise_error = False
    # langchain-core delivers on_tool_* only to handlers that do not ignore agents.
    ignore_agent = False
    ignore_retry = True
    ignore_custom_event = True

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        app_name: str | None = None,
        *,
        max_documents: int | None = None,
        run_ttl_s: float | None = None,
        max_open_runs: int | None = None,
        capture_vector_stores: bool | None = None,
    ) -> None:
        super().__init__()
        if app_name is not None and not isinstance(app_name, str):
            raise ValueError(f"app_name must be a string, got {type(app_name).__name__}")
        self._tracer = trace.get_tracer(_SCOPE, tracer_provider=tracer_provider)
        self._app_name = app_name
        _app_names.announce(app_name, tracer_provider)
        self._run_ttl_s = _settings.setting(_settings.RUN_TTL_S, run_ttl_s)
        self._max_steps = _settings.setting(_settings.MAX_OPEN_RUNS, max_open_runs)
        self._runs = RunMap(self._run_ttl_s, self._max_steps)
        # Open steps inside requests: run id -> (name, start ns, passages given,
        # parent run id).
        self._steps: dict[int, tuple[str, int, _found_documents.StepInput | None, int]] = {}
        limit = SpanLimits().max_span_attributes
        self._document_attributes = attributes.DocumentAttributes(
            _values.write_document, "langchain.document",
            _settings.setting(_settings.MAX_DOCUMENTS, max_documents),
            None if limit is None else max(limit - _RETRIEVER_BASE_ATTRIBUTES, 0))
        self._reranked_attributes = attributes.DocumentAttributes(
            _values.write_document, "langchain.reranked_document",
            _settings.setting(_settings.MAX_DOCUMENTS, max_documents),
            None if limit is None else max(limit - _RETRIEVER_BASE_ATTRIBUTES, 0),
            sc.RERANKER_OUTPUT_DOCUMENTS)
        self._emitter = Emitter(self._tracer, self._runs, self._run_ttl_s)
        # Start attributes that depend only on the chain's or model's name, built once.
        self._root_attrs: dict[str, dict[str, Any]] = {}
        self._llm_attrs: dict[tuple[str | None, str | None], dict[str, Any]] = {}
        self.evicted_runs = 0
        self.captures_vector_stores: bool = _settings.setting(
            _settings.CAPTURE_VECTOR_STORES, capture_vector_stores)
        if self.captures_vector_stores:
            try:
                _vector_stores.enable()
            except Exception as exc:
                record_internal_error("langchain.vector_store_wrap", exc)

    @property
    def open_runs(self) -> int:
        """Runs started and not yet ended or evicted (for monitoring and tests)."""
        return len(self._runs)

    def run_is_open(self, run_id: int) -> bool:
        """Whether the run with this ``UUID.int`` has started and not yet ended."""
        return self._runs.get(run_id) is not None

    # Chains -------------------------------------------------------------------

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None,
                       metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            name = _run_name(serialized, kwargs, "chain")
            if parent_run_id is None:
                parent_run_id = self._adopting_run()
            parent = (self._runs.link(run_id.int, parent_run_id.int)
                      if parent_run_id is not None else None)
            if parent is not None:
                assert parent_run_id is not None
                root = parent.root
                if not root.session_looked_up:
                    _session_from_config(root, parent_run_id)
                # A step inside a request (a graph node, a task): its name and start
                # name the passages it may return; the passages it is given tell
                # whether it filtered them.
                if len(self._steps) >= self._max_steps:
                    self._steps.clear()  # steps that never ended; only names are lost
                self._steps[run_id.int] = (name, time.time_ns(),
                                           _found_documents.step_input(inputs),
                                           parent_run_id.int)
                return
            self._start_root(run_id, name, None, inputs, metadata)
        except Exception as exc:
            record_internal_error("langchain.on_chain_start", exc)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            run = self._runs.pop(run_id.int)
            if run is None or run.root.suppressed:
                return
            step = self._steps.pop(run_id.int, None)
            if run.run_id == run_id.int:
                self._end_root_chain(run, outputs, kwargs.get("inputs"), None)
            else:
                found = False
                for key, docs in _found_documents.in_output(outputs):
                    name, start, above = ((step[0], step[1], step[3]) if step is not None
                                          else (key, None, 0))
                    found |= self._found(run, name, docs, None, start, above=above)
                if not found and step is not None and step[2] is not None:
                    self._kept(run, step, outputs, kwargs)
        except Exception as exc:
            record_internal_error("langchain.on_chain_end", exc)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            run = self._runs.pop(run_id.int)
            self._steps.pop(run_id.int, None)
            if run is None or run.root.suppressed:
                return
            if run.run_id == run_id.int:
                self._end_root_chain(run, None, kwargs.get("inputs"), error)
            elif _discards.is_failure(error):
                self._attempt_failed(run.root, run_id.int)
        except Exception as exc:
            record_internal_error("langchain.on_chain_error", exc)

    # Retrievers ---------------------------------------------------------------

    def on_retriever_start(self, serialized: dict[str, Any] | None, query: Any, *,
                           run_id: UUID, parent_run_id: UUID | None = None,
                           **kwargs: Any) -> None:
        try:
            parent = self._runs.get(parent_run_id.int) if parent_run_id is not None else None
            if parent is not None and parent.attrs.get(sc.SPAN_KIND) == sc.KIND_RETRIEVER:
                # A retriever inside a retriever (an ensemble's parts, the base of a
                # compression or multi-query retriever): the outer one's documents are
                # what the app got, so only it records passages, as in LlamaIndex.
                self._runs.alias(run_id.int, parent)
                return
            _vector_stores.retriever_started(
                self, run_id.int, parent_run_id.int if parent_run_id is not None else None)
            attrs = _RETRIEVER_ATTRIBUTES.copy()
            attrs.update(attributes.input_attributes(attributes.as_text(query)))
            self._start_child(run_id, parent_run_id, _run_name(serialized, kwargs, "retriever"),
                              attrs)
        except Exception as exc:
            record_internal_error("langchain.on_retriever_start", exc)

    def on_retriever_end(self, documents: Sequence[Any], *, run_id: UUID,
                         **kwargs: Any) -> None:
        try:
            scores = kwargs.get(_vector_stores.SCORES)
            build: _Build = self._document_attributes
            if scores:
                # A vector store's ``*_with_score`` search (``_vector_stores``).
                build = functools.partial(_with_scores, self._document_attributes, scores)
            run = self._end_child(run_id, build, documents, None)
            if run is not None:
                run.documents = documents
                run.lineage = self._lineage(run.parent_id, run.root.run_id)
                run.root.retrieved.append(documents)
        except Exception as exc:
            record_internal_error("langchain.on_retriever_end", exc)

    def on_retriever_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            self._end_child(run_id, None, None, error)
        except Exception as exc:
            record_internal_error("langchain.on_retriever_error", exc)

    # Models -------------------------------------------------------------------

    def on_chat_model_start(self, serialized: dict[str, Any] | None, messages: Any, *,
                            run_id: UUID, parent_run_id: UUID | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        try:
            self._start_llm(serialized, messages, run_id, parent_run_id, metadata, kwargs)
        except Exception as exc:
            record_internal_error("langchain.on_chat_model_start", exc)

    def on_llm_start(self, serialized: dict[str, Any] | None, prompts: Any, *, run_id: UUID,
                     parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                     **kwargs: Any) -> None:
        try:
            self._start_llm(serialized, prompts, run_id, parent_run_id, metadata, kwargs)
        except Exception as exc:
            record_internal_error("langchain.on_llm_start", exc)

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            self._end_child(run_id, _span_attributes.completion_attributes, response, None)
        except Exception as exc:
            record_internal_error("langchain.on_llm_end", exc)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            self._end_child(run_id, None, None, error)
        except Exception as exc:
            record_internal_error("langchain.on_llm_error", exc)

    # Tools --------------------------------------------------------------------

    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: Any, *,
                      run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        try:
            name = _run_name(serialized, kwargs, "tool")
            self._start_child(run_id, parent_run_id, name, _span_attributes.tool_start_attributes(
                name, serialized, input_str, kwargs))
        except Exception as exc:
            record_internal_error("langchain.on_tool_start", exc)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            run = self._runs.pop(run_id.int)
            if run is None or run.run_id != run_id.int or run.suppressed:
                return
            try:
                docs = _found_documents.in_tool_output(output)
                if docs:
                    self._found(run, run.name, docs, _span_attributes.tool_input(run.attrs),
                                run.start_ns, above=run.parent_id)
            finally:
                self._end_run(run, _span_attributes.tool_end_attributes, output, None)
        except Exception as exc:
            record_internal_error("langchain.on_tool_end", exc)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        try:
            run = self._end_child(run_id, None, None, error)
            if run is not None and _discards.is_failure(error):
                self._attempt_failed(run.root, run.run_id)
        except Exception as exc:
            record_internal_error("langchain.on_tool_error", exc)

    # Internals ----------------------------------------------------------------

    def _start_root(self, run_id: UUID, name: str, attrs: dict[str, Any] | None,
                    inputs: Any, metadata: Mapping[str, Any] | None = None) -> None:
        """A new request: a root chain (``attrs`` None), or a retriever or model called
        on its own."""
        run = Run(run_id.int, None, name=name, start_ns=time.time_ns())
        ctx = otel_context.get_current()
        if otel_context.get_value(_SUPPRESS_INSTRUMENTATION_KEY, ctx):
            # Registered anyway, so that its children are not taken for roots.
            run.suppressed = True
        elif attrs is not None:
            run.attrs = attrs
        else:
            run.streaming = _values.is_stream_placeholder(inputs)
            question = None if run.streaming else _values.question_of(inputs)
            run.question_known = question is not None
            run.attrs = self._chain_attributes(name).copy()
            run.attrs.update(attributes.input_attributes(question))
            if metadata:
                session = _values.session_of(metadata)
                if session is not None:
                    run.attrs.update(attributes.session_attributes(session))
                    run.session_looked_up = True
        run.ctx = ctx
        self._watch_task(run)
        self._evict(self._runs.add_root(run))

    def _start_child(self, run_id: UUID, parent_run_id: UUID | None, name: str,
                     attrs: dict[str, Any], prompt: Any = None) -> None:
        if parent_run_id is None:
            parent_run_id = self._adopting_run()
            if parent_run_id is None:
                self._start_root(run_id, name, attrs, None)
                return
        parent = self._runs.get(parent_run_id.int)
        if parent is None:
            self._start_root(run_id, name, attrs, None)
        elif parent.root.suppressed:
            self._runs.alias(run_id.int, parent)
        else:
            run = Run(run_id.int, parent.root, parent, name, attrs, time.time_ns())
            run.parent_id = parent_run_id.int
            run.prompt = prompt
            if self._runs.add_child(run):
                self._emitter.start_late(run)

    def _start_llm(self, serialized: dict[str, Any] | None, messages: Any, run_id: UUID,
                   parent_run_id: UUID | None, metadata: Mapping[str, Any] | None,
                   kwargs: Mapping[str, Any]) -> None:
        invocation = kwargs.get("invocation_params")
        model = _values.model_of(metadata, invocation if type(invocation) is dict else None)
        provider = _values.provider_of(metadata)
        base = self._llm_attrs.get((model, provider))
        if base is None:
            base = self._remember(self._llm_attrs, (model, provider),
                                  dict(attributes.llm_attributes(model, provider, None, None)))
        attrs = base.copy()
        try:
            attrs.update(_span_attributes.prompt_attributes(messages))
        finally:
            self._start_child(run_id, parent_run_id, _run_name(serialized, kwargs, "llm"), attrs,
                              messages)

    def _end_child(self, run_id: UUID, build: _Build | None, value: Any,
                   error: BaseException | None) -> Run | None:
        """End a retriever, model or tool run with what ``build(value)`` gives; ended
        even when that fails (the failure is then recorded by the caller)."""
        run = self._runs.pop(run_id.int)
        if run is None or run.run_id != run_id.int or run.suppressed:
            return None
        self._end_run(run, build, value, error)
        return run

    def _end_run(self, run: Run, build: _Build | None, value: Any,
                 error: BaseException | None) -> None:
        attrs = None
        try:
            if build is not None:
                attrs = build(value)
        finally:
            end = time.time_ns()
            if run.root is run:
                self._root_ending(run, end, error)
                self._emitter.end_root(run, end, attrs, error)
            else:
                self._emitter.end_child(run, end, attrs, error)

    def _end_root_chain(self, run: Run, outputs: Any, inputs: Any,
                        error: BaseException | None) -> None:
        attrs: dict[str, Any] = {}
        try:
            self._root_ending(run, time.time_ns(), error)
            if not any(run.retrieved):
                # A graph resumed from its checkpoint (``Command(resume=...)``, input
                # None) retrieved in an earlier run: its state holds those passages.
                for key, docs in _found_documents.in_output(outputs):
                    self._found(run, key, docs, None, None)
            if not any(run.retrieved):
                self._tool_outputs_as_passages(run)
            if not run.question_known:
                question = _values.question_of(inputs)
                if question is None and type(outputs) is dict:
                    # ... and its question is in the state it returns.
                    question = _values.question_of(outputs)
                attrs.update(attributes.input_attributes(question))
            answer = _values.answer_of(outputs)
            attrs.update(attributes.output_attributes(answer))
            if error is None and run.retrieved:
                try:
                    self._choose_passages(run, answer)
                except Exception as exc:  # the rest of the root's attributes still count
                    record_internal_error("langchain.passages_in_prompt", exc)
            # A consumer that stops a sync stream early ends the root while the
            # model run is still open.
            if run.open_children > 0:
                attrs[sc.RAGAS_STREAM_STATUS] = sc.STREAM_ABANDONED
            elif run.streaming and error is None:
                attrs[sc.RAGAS_STREAM_STATUS] = sc.STREAM_COMPLETED
        finally:
            self._emitter.end_root(run, time.time_ns(), attrs, error)

    def _choose_passages(self, root: Run, answer: str | None) -> None:
        """Leave out the passages the answer was not generated from (``_discards``,
        ``_in_prompt``); a RERANKER span holds those the answering prompt shows when
        that is not every passage retrieved (or a part of one)."""
        again = ((root.failed is not None or len(root.retrieved) > 1)
                 and _discards.mark(root.children, root.failed, answer))
        choice = _in_prompt.choose(root.children, answer)
        if choice is not None:
            if choice.source is not None:
                root.attrs[sc.RAGAS_PASSAGES_SOURCE] = choice.source
            if choice.shown is not None:
                attrs = _RERANKER_ATTRIBUTES.copy()
                self._reranked_attributes.add(attrs, choice.shown)
                run = Run(0, root, root, _PROMPT_PASSAGES, attrs, choice.start_ns)
                run.end_ns = choice.start_ns
                run.documents = choice.shown
                self._emitter.add_ended(run)
            again |= choice.marked
        if again:
            self._record_again(root)

    def _root_ending(self, root: Run, end_ns: int, error: BaseException | None) -> None:
        """Before a request's spans are made: stop watching its task; if it was
        cancelled, end and forget its runs that will never send an event."""
        _unwatch_task(root)
        if isinstance(error, asyncio.CancelledError):
            for run_id in self._runs.close_request(root, end_ns, error):
                self._steps.pop(run_id, None)

    def _watch_task(self, root: Run) -> None:
        """A request started in an asyncio task ends when that task is cancelled
        with the request still open (one done-callback, removed when the request ends)."""
        loop = asyncio._get_running_loop()
        task = asyncio.current_task(loop) if loop is not None else None
        if task is not None:
            callback = functools.partial(self._task_done, root)
            task.add_done_callback(callback)
            root.task_hook = (task, callback)

    def _task_done(self, root: Run, task: asyncio.Task[Any]) -> None:
        try:
            if not task.cancelled() or self._runs.pop(root.run_id) is not root:
                return  # it ended already, or may still end by its own events
            root.task_hook = None
            error = asyncio.CancelledError()
            if root.suppressed:
                self._runs.close_request(root, time.time_ns(), error)
            else:
                self._end_run(root, None, None, error)
        except Exception as exc:
            record_internal_error("langchain.task_cancelled", exc)

    def _chain_attributes(self, name: str) -> dict[str, Any]:
        attrs = self._root_attrs.get(name)
        if attrs is None:
            attrs = self._remember(self._root_attrs, name, dict(
                attributes.chain_attributes(name, FRAMEWORK, self._app_name)))
        return attrs

    @staticmethod
    def _remember(cache: dict[Any, dict[str, Any]], key: Any,
                  attrs: dict[str, Any]) -> dict[str, Any]:
        # Few chains and models per app; a cap keeps odd ones from growing it.
        if len(cache) < _ATTRIBUTE_CACHE_SIZE:
            cache[key] = attrs
        return attrs

    def _tool_outputs_as_passages(self, root: Run) -> None:
        """A request that recorded no passages but called tools that returned text (a
        tool that joins ``similarity_search`` results into a string, a search API):
        that text is what the model answered from, so each such output is a passage,
        under its tool's span. Requests with passages keep only those: the tools
        that returned them (``create_retriever_tool``) would repeat them."""
        for run in list(root.children):
            attrs = run.attrs
            text = attrs.get(sc.OUTPUT_VALUE)
            if (attrs.get(sc.SPAN_KIND) == sc.KIND_TOOL and run.error is None
                    and run.end_ns is not None and type(text) is str and text.strip()
                    and attrs.get(sc.OUTPUT_MIME_TYPE) == sc.MIME_TEXT):
                self._found(run, run.name, [Document(text)], _span_attributes.tool_input(attrs),
                            run.start_ns, run.end_ns)

    def _found(self, parent: Run, name: str, docs: Sequence[Any], query: str | None,
               start_ns: int | None, end_ns: int | None = None, above: int = 0) -> bool:
        """A RETRIEVER span under ``parent`` for the passages of ``docs`` not yet seen
        in the request (from ``start_ns``, default now, to ``end_ns``, default now);
        whether there were any. ``above``: the run id of the step or tool above the
        one that returned them, if it is open."""
        root = parent.root
        fresh = _found_documents.unseen(docs, root.retrieved)
        if not fresh or root.suppressed:
            return False
        # All of them: the passages seen are the same, and if the retrieval that
        # brought the others is discarded, they are recorded here (``_record_again``).
        root.retrieved.append(docs)
        attrs = _RETRIEVER_ATTRIBUTES.copy()
        attrs.update(attributes.input_attributes(query))
        self._document_attributes.add(attrs, fresh)
        now = time.time_ns() if end_ns is None else end_ns
        run = Run(0, root, parent, name, attrs, now if start_ns is None else start_ns)
        run.end_ns = now
        run.documents = docs
        run.lineage = self._lineage(above, root.run_id)
        self._emitter.add_ended(run)
        return True

    def _lineage(self, run_id: int, root_id: int) -> tuple[int, ...]:
        """The ids of the steps and tools open above a run, nearest first, up to its
        request's root (``root_id``, excluded)."""
        ids: list[int] = []
        steps = self._steps
        for _ in range(_MAX_LINEAGE):
            if run_id == root_id or not run_id:
                break
            step = steps.get(run_id)
            if step is not None:
                ids.append(run_id)
                run_id = step[3]
                continue
            run = self._runs.get(run_id)
            if run is None or run.run_id != run_id:
                break
            ids.append(run_id)
            run_id = run.parent_id
        return tuple(ids)

    def _kept(self, parent: Run, step: tuple[str, int, _found_documents.StepInput | None, int],
              outputs: Any, kwargs: Mapping[str, Any]) -> None:
        """RERANKER spans for the passages a step kept of those it was given."""
        given, start = step[2], step[1]
        if given is _found_documents.STREAMED:
            given = _found_documents.step_input(kwargs.get("inputs"))
            if given is None or given is _found_documents.STREAMED:
                return
            # It started before its input was retrieved: its RERANKER span must start
            # after the retrievals it cut (``extract`` reads them in start order).
            start = time.time_ns()
        if given is not None:
            for docs in _found_documents.kept(outputs, given):
                self._reranked(parent, step[0], docs, start, step[3])

    def _adopting_run(self) -> UUID | None:
        """The run that a run without a parent belongs to: langchain-core's
        ``RunnableWithFallbacks.invoke`` / ``ainvoke`` run each attempt in the config
        made for its children but pass the caller's callbacks on, so the attempt starts
        with no parent run id while the current config's callback manager names the
        fallbacks run. That run, if it is one of this handler's."""
        config = var_child_runnable_config.get()
        if config is None:
            return None
        parent = getattr(config.get("callbacks"), "parent_run_id", None)
        if type(parent) is UUID and self._runs.get(parent.int) is not None:
            return parent
        return None

    def _attempt_failed(self, root: Run, run_id: int) -> None:
        """A step or tool of the request raised: the passages retrieved inside it are
        no passages of the answer, and passages found later are not taken for theirs."""
        if root.failed is None:
            root.failed = set()
        root.failed.add(run_id)
        for child in list(root.children):
            if child.documents is not None and run_id in child.lineage:
                for i, seen in enumerate(root.retrieved):
                    if seen is child.documents:
                        del root.retrieved[i]
                        break

    def _record_again(self, root: Run) -> None:
        """After retrievals were discarded: the passages a found RETRIEVER span left out
        as seen before, in a retrieval now discarded, are its own again."""
        runs = {id(r.documents): r for r in list(root.children) if r.documents is not None}
        seen: set[str] = set()
        for docs in list(root.retrieved):
            run = runs.get(id(docs))
            if run is None or sc.RAGAS_RETRIEVAL_DISCARDED in run.attrs:
                continue
            if run.run_id == 0 and run.attrs.get(sc.SPAN_KIND) == sc.KIND_RETRIEVER:
                fresh = [d for d in docs if getattr(d, "page_content", None) not in seen]
                if len(fresh) != run.attrs.get(attributes.RETRIEVAL_DOCUMENTS_TOTAL):
                    attrs = {k: v for k, v in run.attrs.items()
                             if not k.startswith(_DOCUMENT_KEYS)}
                    self._document_attributes.add(attrs, fresh)
                    run.attrs = attrs
            seen.update(_discards.texts(run))

    def _reranked(self, parent: Run, name: str, docs: Sequence[Document],
                  start_ns: int, above: int = 0) -> None:
        """A RERANKER span under ``parent`` for the passages a step kept: what reaches
        the prompt (``extract`` scores them instead of those it was given). A step
        nested in one that kept the same passages adds none."""
        root = parent.root
        texts = frozenset(d.page_content for d in docs)
        if root.suppressed or root.kept == texts:
            return
        root.kept = texts
        attrs = _RERANKER_ATTRIBUTES.copy()
        self._reranked_attributes.add(attrs, docs)
        run = Run(0, root, parent, name, attrs, start_ns)
        run.end_ns = time.time_ns()
        run.documents = docs
        run.lineage = self._lineage(above, root.run_id)
        self._emitter.add_ended(run)

    def _evict(self, victims: list[Run]) -> None:
        now = time.time_ns()
        for run in victims:
            self.evicted_runs += 1
            if run.root is run:
                _unwatch_task(run)
            if not run.suppressed:
                try:
                    self._emitter.evict(run, now)
                except Exception as exc:
                    record_internal_error("langchain.evict", exc)


def _unwatch_task(root: Run) -> None:
    hook, root.task_hook = root.task_hook, None
    if hook is None:
        return
    task, callback = hook
    loop = task.get_loop()
    if asyncio._get_running_loop() is loop:
        task.remove_done_callback(callback)
        return
    try:  # ended on another thread (evicted): the task is the loop's to change
        loop.call_soon_threadsafe(task.remove_done_callback, callback)
    except RuntimeError:
        pass  # the loop is closed: so is its task, with its callbacks


def _with_scores(build: _Build, scores: Sequence[float], documents: Any) -> dict[str, Any]:
    attrs = build(documents)
    _vector_stores.score_attributes(attrs, scores)
    return attrs


def _session_from_config(root: Run, parent_run_id: UUID | None) -> None:
    """A session id given only in the run config's ``configurable`` (the
    ``session_id`` of ``RunnableWithMessageHistory``): langchain-core copies
    configurable values into run metadata for LangSmith's tracer alone, and a root's
    own start callback runs before its config is made current. So it is read from the
    config current when a child chain starts, once that config is the one its parent
    run made for its children (its callback manager names the parent): a ``batch``
    starts children outside it, in the caller's config."""
    config = var_child_runnable_config.get()
    if config is None or getattr(config.get("callbacks"), "parent_run_id", None) != parent_run_id:
        return
    root.session_looked_up = True
    configurable = config.get("configurable")
    if configurable and not root.suppressed:
        root.attrs.update(attributes.session_attributes(_values.session_of(configurable)))


def _run_name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any],
              default: str) -> str:
    name = kwargs.get("name")
    if isinstance(name, str) and name:
        return name
    if isinstance(serialized, Mapping):
        name = serialized.get("name")
        if isinstance(name, str) and name:
            return name
        ids = serialized.get("id")
        if isinstance(ids, list) and ids and isinstance(ids[-1], str):
            return ids[-1]
    return default
