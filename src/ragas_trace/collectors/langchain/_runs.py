"""The open runs of one handler: run id -> the ``Run`` that owns the nearest span.

Keys are ``UUID.int``: a UUID hashes and compares in Python code, an int in C, and
the map is touched on every callback.

Runs we do not make spans for (prompts, parsers, parallel steps, tools) map to
their parent's ``Run`` object itself, so following the tree costs one dict write
per run and no allocation. Every access goes through one lock: LangChain calls a
handler from the caller's thread, executor threads (``batch``,
``RunnableParallel``) and event-loop tasks at once.

Memory is bounded two ways: runs whose request started more than ``ttl_s`` ago are
evicted (a stream the consumer abandoned may never send its end event), and when
more than ``max_runs`` are open the oldest are evicted first. A cancelled request
frees its runs at once (``close_request``): langchain-core sends no end or error
event for a model, retriever or tool call whose task was cancelled."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

# The asyncio task a request started in, and the done-callback added to it.
TaskHook = tuple[asyncio.Task[Any], Callable[[asyncio.Task[Any]], None]]


class Run:
    """A run we make a span for, or a suppressed request's root (``suppressed``).

    Spans are not made while the chain runs: each run keeps its name, start time and
    attributes, and the request's spans are all made in one burst when its root run
    ends (``RagasCallbackHandler._emit``), with the times recorded here. The SDK's
    code then runs back to back instead of between the chain's steps, where it costs
    about twice as much CPU. A run still open at that point (a stream stopped early)
    gets its span then and ends it itself.
    """

    __slots__ = ("_child_context", "_root", "attrs", "children", "ctx", "documents",
                 "emitted", "end_ns", "error", "evicted", "failed", "kept", "lineage", "name",
                 "open_children", "parent", "parent_id", "prompt", "question_known", "retrieved",
                 "run_id", "run_ids", "session_looked_up", "span", "start_ns", "started",
                 "streaming", "suppressed", "task_hook")

    def __init__(self, run_id: int, root: Run | None, parent: Run | None = None,
                 name: str = "", attrs: dict[str, Any] | None = None,
                 start_ns: int = 0) -> None:
        self.run_id = run_id
        # The run id of its parent (a chain step, a tool), 0 when none: how its
        # ``lineage`` is found.
        self.parent_id = 0
        # None for a root: a root referring to itself would be a reference cycle, and
        # then the request's spans, attributes and passages would wait for the cyclic
        # garbage collector instead of being freed when the request ends (measured on
        # the bench agent: 131 instead of 15 gen-0 collections per 1,500 requests).
        self._root = root
        self.parent = parent
        self.name = name
        self.attrs: dict[str, Any] = attrs if attrs is not None else {}
        self.start_ns = start_ns
        self.end_ns: int | None = None
        self.error: BaseException | None = None
        self.evicted = False
        self.span: Span | None = None
        self.started: float = time.monotonic() if root is None else root.started
        self.suppressed = False
        # Root only: the OTel context current when the request started, its
        # retriever/LLM runs in start order, how many are still open, and whether
        # its spans have been made.
        self.ctx: otel_context.Context | None = None
        self.children: list[Run] = []
        self.open_children = 0
        self.emitted = False
        self.streaming = False
        self.question_known = False
        # Root only: its session id was found, or looked for in its run config.
        self.session_looked_up = False
        # Root only: the document lists recorded so far, so that the same passages
        # arriving again (a tool's artifact, a state snapshot) are not counted twice.
        self.retrieved: list[Any] = []
        # Root only: every run id mapped to this request, so that a cancelled request
        # can forget the runs that will never end; and the asyncio task watch that
        # ends the request if its task is cancelled first (``_cancel``).
        self.run_ids: list[int] = []
        self.task_hook: TaskHook | None = None
        # Root only: the texts of the passages a step last kept (a RERANKER span).
        self.kept: frozenset[str] | None = None
        # Root only: the steps and tools of the request that raised (a fallback's
        # failed attempt, a retried node); None until one does.
        self.failed: set[int] | None = None
        # A retrieval or reranker run: the Documents it returned or kept, whole, and
        # the run ids of the steps and tools that were open above it (``_discards``).
        self.documents: Sequence[Any] | None = None
        self.lineage: tuple[int, ...] = ()
        # A model run: the messages (or prompt strings) it was given, as passed to
        # its start callback (``_in_prompt`` reads the answering call's).
        self.prompt: Any = None
        self._child_context: otel_context.Context | None = None

    @property
    def root(self) -> Run:
        return self._root if self._root is not None else self

    def child_context(self) -> otel_context.Context:
        """The OTel context that parents spans under this run's span, built once."""
        if self._child_context is None:
            span = self.span if self.span is not None else trace.INVALID_SPAN
            self._child_context = trace.set_span_in_context(span)
        return self._child_context


class RunMap:
    def __init__(self, ttl_s: float, max_runs: int) -> None:
        self._lock = threading.Lock()
        self._runs: dict[int, Run] = {}
        self._ttl_s = ttl_s
        self._max_runs = max_runs
        # Sweeping walks the whole map, so it runs at most a few times per TTL.
        self._sweep_every = max(ttl_s / 4, 0.001)
        self._next_sweep = time.monotonic() + self._sweep_every

    def __len__(self) -> int:
        with self._lock:
            return len(self._runs)

    def link(self, run_id: int, parent_run_id: int) -> Run | None:
        """Map a span-less run to its parent's ``Run``; None when the parent is unknown."""
        with self._lock:
            parent = self._runs.get(parent_run_id)
            if parent is not None:
                self._runs[run_id] = parent
                parent.root.run_ids.append(run_id)
            return parent

    def get(self, run_id: int) -> Run | None:
        with self._lock:
            return self._runs.get(run_id)

    def alias(self, run_id: int, run: Run) -> None:
        with self._lock:
            self._runs[run_id] = run
            run.root.run_ids.append(run_id)

    def evict_child(self, run: Run, end_ns: int) -> Span | None:
        """Like ``end_child`` for a run that never ended."""
        with self._lock:
            if run.end_ns is not None:
                return None
            run.evicted = True
            run.end_ns = end_ns
            return run.span

    def add_child(self, run: Run) -> bool:
        """Register a retriever/LLM run; True when its request's spans are already made
        (the caller then makes this run's span itself)."""
        root = run.root
        with self._lock:
            self._runs[run.run_id] = run
            root.run_ids.append(run.run_id)
            root.open_children += 1
            if not root.emitted:
                root.children.append(run)
            return root.emitted

    def end_child(self, run: Run, end_ns: int, attrs: dict[str, Any] | None,
                  error: BaseException | None) -> Span | None:
        """Record a retriever/LLM run's end; returns its span when the caller must end it
        (its request's spans were made already), else None: the burst will, or the
        run was evicted already."""
        with self._lock:
            if run.end_ns is not None:
                return None
            if attrs:
                run.attrs.update(attrs)
            run.error = error
            run.end_ns = end_ns
            return run.span

    def emit_root(self, root: Run, span: Span | None) -> list[Run]:
        """Mark a request's spans as being made; returns its retriever/LLM runs."""
        with self._lock:
            root.span = span
            root.emitted = True
            children, root.children = root.children, []
            return children

    def set_span(self, run: Run, span: Span) -> bool:
        """Attach a span made by the burst; True when the run has ended (end it now)."""
        with self._lock:
            run.span = span
            return run.end_ns is not None

    def add_root(self, run: Run) -> list[Run]:
        """Register a new request; returns the runs evicted to make room or for age."""
        now = run.started
        with self._lock:
            self._runs[run.run_id] = run
            if now < self._next_sweep and len(self._runs) <= self._max_runs:
                return []
            self._next_sweep = now + self._sweep_every
            return self._evict_locked(now - self._ttl_s)

    def pop(self, run_id: int) -> Run | None:
        """Forget a run; returns the ``Run`` it mapped to (its own when
        ``run.run_id == run_id``, else its nearest spanned ancestor's)."""
        with self._lock:
            run = self._runs.pop(run_id, None)
            if run is not None and run.run_id == run_id and run.root is not run:
                run.root.open_children -= 1
            return run

    def close_request(self, root: Run, end_ns: int, error: BaseException) -> list[int]:
        """Forget every run of a request whose root the caller took from the map and
        that ended with ``error`` (a cancellation): its runs still open end now, with
        it. Returns the run ids forgotten."""
        with self._lock:
            forgotten = []
            for run_id in root.run_ids:
                run = self._runs.get(run_id)
                if run is not None and run.root is root:
                    del self._runs[run_id]
                    forgotten.append(run_id)
            root.run_ids = []
            for run in root.children:
                if run.end_ns is None:
                    run.end_ns = end_ns
                    run.error = error
            root.open_children = 0
            return forgotten

    def add_ended(self, run: Run) -> bool:
        """Add a run that has no events of its own (it is ended already); True when
        its request's spans are made already (the caller then makes its span)."""
        root = run.root
        with self._lock:
            if not root.emitted:
                root.children.append(run)
            return root.emitted

    def _evict_locked(self, cutoff: float) -> list[Run]:
        victims: list[Run] = []
        # Over the cap, go down to 90% of it so that a sustained overload does not
        # rescan the map on every new request.
        excess = len(self._runs) - (self._max_runs * 9 // 10 if len(self._runs) > self._max_runs
                                    else self._max_runs)
        # Insertion order is start order: when over the cap, the oldest go first.
        for run_id, run in list(self._runs.items()):
            if run.started < cutoff or excess > 0:
                del self._runs[run_id]
                excess -= 1
                if run.run_id == run_id:
                    victims.append(run)
        return victims
