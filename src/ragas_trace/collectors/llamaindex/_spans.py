"""Our OpenTelemetry spans for the collector's nodes: made lazily (with every attribute
known by then, in one SDK call), parented through the nodes, ended once, and the
context variable ``CURRENT`` kept in step with the dispatcher's span stack."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ragas_trace.collectors import _attributes as attributes
from ragas_trace.collectors.llamaindex._nodes import CURRENT, Node, span_name


class SpanBook:
    """The span half of the ``Tracker``: ``_lock`` guards ending a node once and the
    request's list of ended nodes; ``_pending`` maps the dispatcher ids of streaming
    LLM calls that returned to the node waiting for their end event."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer
        self._pending: dict[str, Node] = {}
        self._lock = threading.Lock()

    def _push(self, node: Node) -> None:
        node.token = CURRENT.set(node)

    def _pop(self, node: Node) -> None:
        token = node.token
        node.token = None
        try:
            if token is not None:
                CURRENT.reset(token)
        except ValueError:
            # Exited in another context than it entered (a future's callback).
            CURRENT.set(node.parent)

    def _span_of(self, node: Node) -> Span:
        """The node's span, created now (with everything known so far) if not yet."""
        span = node.span
        if span is None:
            parent = node.parent
            ctx = node.parent_ctx if parent is None else self._context_of(parent)
            span = node.span = self._tracer.start_span(
                node.name or span_name(node.li_id), ctx, attributes=node.attrs,
                start_time=node.start_ns)
            node.attrs = None
        return span

    def _context_of(self, node: Node) -> otel_context.Context:
        ctx = node.ctx
        if ctx is None:
            if node.span is None:
                # A child of a RETRIEVER/LLM span (rare): create the parent first, once.
                with self._lock:
                    span = self._span_of(node)
            else:
                span = node.span
            ctx = node.ctx = trace.set_span_in_context(span)
        return ctx

    def _add(self, node: Node, attrs: Iterable[attributes.Attribute]) -> None:
        pending = node.attrs  # one read: another thread may make the span meanwhile
        if node.span is None and pending is not None:
            pending.update(attrs)
        else:
            self._span_of(node).set_attributes(dict(attrs))

    def _end_node(self, node: Node, end_ns: int | None = None) -> None:
        node_end = time.time_ns() if end_ns is None else end_ns
        request = node.request
        with self._lock:
            if node.ended:
                return
            node.ended = True
            node.end_ns = node_end
            later = not request.ended
            if later:
                request.done.append(node)
        if node.pending:
            pending = self._pending
            pending.pop(node.li_id, None)
            for alias in node.aliases:
                pending.pop(alias, None)
        if not later:
            self._finish_span(node)

    def _finish_span(self, node: Node) -> None:
        span = self._span_of(node)
        try:
            if node.error is not None:
                record_error(span, node.error)
        finally:
            span.end(node.end_ns)


def record_error(span: Span, err: BaseException | None) -> None:
    if err is None:
        return
    span.record_exception(err)
    span.set_status(Status(StatusCode.ERROR, f"{type(err).__name__}: {err}"))
