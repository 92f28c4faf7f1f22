"""Trace reassembly: spans of one trace arrive in any order, split over batches and
requests, and a RAG root may only be scored once its retrievals are in.

A trace becomes *RAG* when a root candidate (CHAIN/AGENT or OpenLLMetry workflow
span with a question) or a retrieval span of it arrives. From then on its spans
are held together until the trace is ready: it has a retrieval and a top root (a
candidate whose ancestors have all arrived, none of them a candidate, up to the
trace root or a remote parent) and nothing new came for ``quiet_s``; or
``max_wait_s`` passed since it became RAG. Then the whole trace goes to the sink
at once (the scoring processor sees it as if it had run in-process). Spans of
other traces go to the sink at once, one by one, and are not kept. Memory is
bounded by ``max_spans`` and ``max_bytes``: past either the oldest held trace is
released early.

A root candidate is scored once: a copy of one (same trace and span id) that
arrives while its trace is held, or after the trace was released (the last
``recent_roots`` released roots, for ``recent_ttl_s``), goes to the sink's
``duplicate`` and is forwarded unscored. Without that, a sender replaying one root
500 times would get 500 judge runs, evaluation spans and counts.

Limitation: a span that arrived before its trace showed any RAG sign has already
been forwarded and is not part of the released trace (if it is the RAG root's
parent, the trace waits ``max_wait_s``). In-process exporters send retrievals
before their ancestors (children end first), so the spans between a root and its
retrievals are not affected in practice."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.extract import is_rag_root_candidate, span_kind
from ragas_trace.gateway.convert import ReceivedSpan
from ragas_trace.gateway.sizes import span_bytes

Release = Literal["ready", "max_wait", "evicted", "shutdown"]
# What ``extract.span_kind`` looks at: a span with none of these is neither a root
# candidate nor a retrieval.
_KIND_KEYS = frozenset({sc.SPAN_KIND, sc.TRACELOOP_SPAN_KIND, sc.GEN_AI_OPERATION_NAME})


class TraceSink(Protocol):
    def pass_through(self, span: ReadableSpan) -> None:
        """A span of a trace with no RAG sign: forward it now."""

    def complete(self, spans: list[ReadableSpan], why: Release) -> None:
        """Every held span of a RAG trace (at least one root candidate among them)."""

    def duplicate(self, span: ReadableSpan) -> None:
        """Another copy of a root candidate already held or released: forward it,
        never score it."""


@dataclass
class _Trace:
    since: float
    last_seen: float
    spans: list[ReadableSpan] = field(default_factory=list)
    nbytes: int = 0
    has_candidate: bool = False
    has_retrieval: bool = False
    roots: set[int] = field(default_factory=set)  # span ids of the root candidates


class TraceAssembler:
    """``add`` is called by receiver threads, ``tick`` by the gateway's timer thread;
    neither blocks beyond a short lock, and sink calls are made outside it."""

    def __init__(self, sink: TraceSink, *, quiet_s: float = 2.0, max_wait_s: float = 10.0,
                 max_spans: int = 50_000, max_bytes: int = 256 << 20,
                 recent_roots: int = 65_536, recent_ttl_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        for name, value in (("quiet_s", quiet_s), ("max_wait_s", max_wait_s)):
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        if max_spans < 1:
            raise ValueError(f"max_spans must be >= 1, got {max_spans}")
        self._sink = sink
        self._quiet_s = quiet_s
        self._max_wait_s = max(max_wait_s, quiet_s)
        self._max_spans = max_spans
        self._max_bytes = max_bytes
        self._clock = clock
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, _Trace] = OrderedDict()
        self._kept = 0
        self._kept_bytes = 0
        # Roots released to the sink: (trace id << 64 | span id) -> when. 164 bytes
        # an entry (measured), so at most 10.7 MB with the default bound.
        self._recent: OrderedDict[int, float] = OrderedDict()
        self._recent_max = recent_roots
        self._recent_ttl_s = recent_ttl_s

    def held_traces(self) -> int:
        with self._lock:
            return len(self._traces)

    def held_spans(self) -> int:
        with self._lock:
            return self._kept

    def add(self, spans: Iterable[ReadableSpan]) -> None:
        now = self._clock()
        forward: list[ReadableSpan] = []
        copies: list[ReadableSpan] = []
        evicted: list[_Trace] = []
        with self._lock:
            for span in spans:
                ctx = span.context
                trace_id, span_id = (ctx.trace_id, ctx.span_id) if ctx is not None else (0, 0)
                trace = self._traces.get(trace_id)
                signs = _may_be_rag(span)
                candidate = signs and is_rag_root_candidate(span)
                retrieval = signs and span_kind(span) == sc.KIND_RETRIEVER
                if candidate and trace_id and (
                        (trace is not None and span_id in trace.roots)
                        or (trace_id << 64 | span_id) in self._recent):
                    copies.append(span)
                    continue
                if trace is None:
                    if not (candidate or retrieval) or trace_id == 0:
                        forward.append(span)
                        continue
                    trace = self._traces[trace_id] = _Trace(now, now)
                trace.last_seen = now
                trace.spans.append(span)
                size = span_bytes(span)
                trace.nbytes += size
                self._kept_bytes += size
                if candidate:
                    trace.has_candidate = True
                    trace.roots.add(span_id)
                trace.has_retrieval |= retrieval
                self._kept += 1
            while (self._kept > self._max_spans or self._kept_bytes > self._max_bytes) \
                    and self._traces:
                trace_id, oldest = self._traces.popitem(last=False)
                self._kept -= len(oldest.spans)
                self._kept_bytes -= oldest.nbytes
                self._remember(trace_id, oldest, now)
                evicted.append(oldest)
        for span in forward:
            self._sink.pass_through(span)
        for span in copies:
            self._sink.duplicate(span)
        self._release(evicted, "evicted")

    def tick(self) -> None:
        """Release every trace that is ready or has waited ``max_wait_s``."""
        now = self._clock()
        ready: list[_Trace] = []
        late: list[_Trace] = []
        with self._lock:
            for trace_id in list(self._traces):
                trace = self._traces[trace_id]
                if trace.has_candidate and trace.has_retrieval and \
                        now - trace.last_seen >= self._quiet_s and _has_top_root(trace.spans):
                    ready.append(trace)
                elif now - trace.since >= self._max_wait_s:
                    late.append(trace)
                else:
                    continue
                del self._traces[trace_id]
                self._kept -= len(trace.spans)
                self._kept_bytes -= trace.nbytes
                self._remember(trace_id, trace, now)
            recent = self._recent
            while recent and next(iter(recent.values())) <= now - self._recent_ttl_s:
                recent.popitem(last=False)
        self._release(ready, "ready")
        self._release(late, "max_wait")

    def close(self) -> None:
        """Release everything held now (shutdown)."""
        with self._lock:
            traces = list(self._traces.values())
            self._traces.clear()
            self._kept = 0
            self._kept_bytes = 0
        self._release(traces, "shutdown")

    def _remember(self, trace_id: int, trace: _Trace, now: float) -> None:
        """Under the lock: the roots of a trace leaving for the sink."""
        for span_id in trace.roots:
            self._recent[trace_id << 64 | span_id] = now
        while len(self._recent) > self._recent_max:
            self._recent.popitem(last=False)

    def _release(self, traces: list[_Trace], why: Release) -> None:
        for trace in traces:
            if trace.has_candidate:
                self._sink.complete(trace.spans, why)
            else:
                # Retrievals whose root never came: nothing to score.
                for span in trace.spans:
                    self._sink.pass_through(span)


def _may_be_rag(span: ReadableSpan) -> bool:
    """False when a received span cannot be a root candidate or a retrieval: it has
    none of the span-kind attributes. Checked without decoding the attributes, so
    spans of non-RAG traffic are forwarded without ever being decoded."""
    return not isinstance(span, ReceivedSpan) or span.has_any_attribute(_KIND_KEYS)


def _has_top_root(spans: list[ReadableSpan]) -> bool:
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    for span in spans:
        if is_rag_root_candidate(span) and _ancestry_complete_without_candidate(span, by_id):
            return True
    return False


def _ancestry_complete_without_candidate(span: ReadableSpan,
                                         by_id: dict[int, ReadableSpan]) -> bool:
    node = span
    for _ in range(len(by_id) + 1):
        parent = node.parent
        if parent is None or parent.is_remote:
            return True
        found = by_id.get(parent.span_id)
        if found is None or is_rag_root_candidate(found):
            return False
        node = found
    return False  # a parent cycle: malformed, let max_wait release it
