"""Which finished spans belong to which RAG request, until its root ends.

Per trace: a parent map of the spans seen since the RAG root started (ints only),
the root candidates still open, and references to the RETRIEVER, RERANKER and LLM spans
(decided by kind), all bounded. The root is the candidate with no open
candidate above it; at its end ``take`` hands back its descendants' kept spans,
plus id-only stand-ins for the spans in between so that ``extract_record`` can
walk the ancestry."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import Enum

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc

KEPT_KINDS = frozenset({sc.KIND_RETRIEVER, sc.KIND_RERANKER, sc.KIND_LLM})
MAX_SPANS_PER_TRACE = 4096
MAX_KEPT_PER_TRACE = 256


class Ended(Enum):
    """What a finished span is to the scorer."""

    OTHER = 0  # not a RAG root: goes downstream as it is
    ROOT = 1  # the RAG root of its trace
    # A top-level CHAIN/AGENT span with no question: a request whose question was not
    # captured. It gets an evaluation status all the same (``unscorable``).
    ROOT_WITHOUT_QUESTION = 2


@dataclass
class _Trace:
    created: float
    parents: dict[int, int | None] = field(default_factory=dict)
    open_candidates: set[int] = field(default_factory=set)
    kept: list[ReadableSpan] = field(default_factory=list)


class TraceBuffer:
    """Thread-safe; at most ``max_traces`` traces, the oldest evicted first."""

    def __init__(self, max_traces: int = 10000, ttl_s: float = 600.0) -> None:
        self.max_traces = max_traces
        self._ttl = ttl_s
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, _Trace] = OrderedDict()
        # ids of traces evicted while open, so that their root is not scored without
        # its passages (bounded like the traces themselves)
        self._evicted: OrderedDict[int, None] = OrderedDict()
        self.evicted = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._traces)

    def started(self, span: ReadableSpan, root_kind: bool, has_question: bool,
                track: bool) -> None:
        """A span started. A CHAIN/AGENT span is a root candidate if it has a question
        or nothing above it in the trace (a streamed request learns its question only
        at the end). ``track`` opens a trace even for other spans."""
        ctx = span.context
        if ctx is None:
            return
        parent = span.parent.span_id if span.parent else None
        with self._lock:
            trace = self._traces.get(ctx.trace_id)
            if trace is None:
                if not (root_kind or track):
                    return
                trace = self._open(ctx.trace_id)
            top_level = parent is None or parent not in trace.parents
            if len(trace.parents) < MAX_SPANS_PER_TRACE:
                trace.parents[ctx.span_id] = parent
            if root_kind and (has_question or top_level):
                trace.open_candidates.add(ctx.span_id)

    def ended(self, span: ReadableSpan, kind: str | None, candidate: bool) -> Ended:
        """Record a finished span; what it is to the scorer."""
        ctx = span.context
        if ctx is None:
            return Ended.OTHER
        with self._lock:
            trace = self._traces.get(ctx.trace_id)
            if trace is None:
                return Ended.ROOT if candidate else Ended.OTHER
            was_open = ctx.span_id in trace.open_candidates
            trace.open_candidates.discard(ctx.span_id)
            if was_open and not candidate and not trace.open_candidates:
                # The last possible root ended without a question (it was open as a
                # top-level span): nothing to score, but the gap must show.
                del self._traces[ctx.trace_id]
                return Ended.ROOT_WITHOUT_QUESTION
            if len(trace.parents) < MAX_SPANS_PER_TRACE:
                trace.parents.setdefault(ctx.span_id,
                                         span.parent.span_id if span.parent else None)
            if candidate and not self._below_open_candidate(trace, ctx.span_id):
                return Ended.ROOT
            if kind in KEPT_KINDS and len(trace.kept) < MAX_KEPT_PER_TRACE:
                trace.kept.append(span)
            return Ended.OTHER

    def was_evicted(self, trace_id: int) -> bool:
        """Whether the trace was evicted while open (asked once, at its root's end)."""
        with self._lock:
            return self._evicted.pop(trace_id, 0) is None

    def take(self, root: ReadableSpan) -> list[ReadableSpan]:
        """Forget the root's trace; its kept descendants plus ancestry stand-ins."""
        ctx = root.context
        if ctx is None:
            return []
        with self._lock:
            trace = self._traces.pop(ctx.trace_id, None)
        if trace is None:
            return []
        out: list[ReadableSpan] = []
        stand_ins: set[int] = set()
        for span in trace.kept:
            chain = self._chain_to(trace, span, ctx.span_id)
            if chain is None:
                continue
            out.append(span)
            stand_ins.update(chain)
        for span_id in stand_ins:
            parent = trace.parents.get(span_id)
            # resource given: without one, ReadableSpan runs Resource.create({}) and its
            # detectors in a thread pool, about a millisecond per stand-in.
            out.append(ReadableSpan(
                name="", resource=root.resource,
                context=trace_api.SpanContext(ctx.trace_id, span_id, False),
                parent=(trace_api.SpanContext(ctx.trace_id, parent, False)
                        if parent is not None else None)))
        return out

    def expire(self, now: float | None = None) -> int:
        """Forget traces older than the TTL (requests that never ended)."""
        now = time.monotonic() if now is None else now
        removed = 0
        with self._lock:
            while self._traces:
                trace_id, trace = next(iter(self._traces.items()))
                if now - trace.created < self._ttl:
                    break
                del self._traces[trace_id]
                removed += 1
        return removed

    def _open(self, trace_id: int) -> _Trace:
        if len(self._traces) >= self.max_traces:
            evicted_id, _ = self._traces.popitem(last=False)
            self._evicted[evicted_id] = None
            if len(self._evicted) > self.max_traces:
                self._evicted.popitem(last=False)
            self.evicted += 1
        trace = _Trace(created=time.monotonic())
        self._traces[trace_id] = trace
        return trace

    @staticmethod
    def _below_open_candidate(trace: _Trace, span_id: int) -> bool:
        seen = {span_id}
        parent = trace.parents.get(span_id)
        while parent is not None and parent not in seen:
            if parent in trace.open_candidates:
                return True
            seen.add(parent)
            parent = trace.parents.get(parent)
        return False

    @staticmethod
    def _chain_to(trace: _Trace, span: ReadableSpan, root_id: int) -> list[int] | None:
        """Span ids strictly between ``span`` and the root, or None if not a descendant."""
        chain: list[int] = []
        parent = span.parent.span_id if span.parent else None
        while parent is not None and len(chain) < MAX_SPANS_PER_TRACE:
            if parent == root_id:
                return chain
            chain.append(parent)
            parent = trace.parents.get(parent)
        return None
