"""Making a request's spans from its recorded runs: all at once when the root run
ends (or is evicted), with the times the runs recorded.

Runs of a stream that was stopped early may end after their root: their spans are
made in the burst and ended by the run's own end event (or by eviction). Which side
ends a span is decided under the run map's lock, so each span is ended exactly once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry.trace import Span, Status, StatusCode, Tracer

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.collectors.langchain._runs import Run, RunMap


class Emitter:
    def __init__(self, tracer: Tracer, runs: RunMap, ttl_s: float) -> None:
        self._tracer = tracer
        self._runs = runs
        self._evicted_status = Status(StatusCode.ERROR,
                                      f"no end event within {ttl_s:g} s; evicted")

    def end_root(self, root: Run, end_ns: int, attrs: dict[str, Any] | None,
                 error: BaseException | None, evict_open: bool = False) -> None:
        """Make the request's spans: the root's, then its runs' in start order."""
        if attrs:
            root.attrs.update(attrs)
        root.error = error
        root.end_ns = end_ns
        span: Span | None = None
        try:
            span = self._tracer.start_span(root.name, root.ctx, attributes=root.attrs,
                                           start_time=root.start_ns)
        finally:
            children = self._runs.emit_root(root, span)
            for child in children:
                if evict_open and child.end_ns is None:
                    self._runs.evict_child(child, end_ns)
                self._emit_child(child)
            if span is not None:
                self._finish(span, root)

    def end_child(self, run: Run, end_ns: int, attrs: dict[str, Any] | None,
                  error: BaseException | None) -> None:
        span = self._runs.end_child(run, end_ns, attrs, error)
        if span is not None:
            # Its request's spans were made before this run ended.
            if attrs:
                span.set_attributes(attrs)
            self._finish(span, run)

    def start_late(self, run: Run) -> None:
        """A run that starts after its request's spans were made gets its span now."""
        span = self._tracer.start_span(run.name, _parent_context(run), attributes=run.attrs,
                                       start_time=run.start_ns)
        self._runs.set_span(run, span)

    def add_ended(self, run: Run) -> None:
        """A run recorded at its end (passages found in a tool's artifact or a step's
        output): made with the request's spans, or now if those are made already."""
        if self._runs.add_ended(run):
            self.start_late(run)
            if run.span is not None:
                self._finish(run.span, run)

    def evict(self, run: Run, now_ns: int) -> None:
        if run.root is run:
            run.evicted = True
            self.end_root(run, now_ns, None, None, evict_open=True)
            return
        span = self._runs.evict_child(run, now_ns)
        if span is not None:
            self._finish(span, run)

    def _emit_child(self, run: Run) -> None:
        try:
            ended_before = run.end_ns is not None
            span = self._tracer.start_span(run.name, _parent_context(run),
                                           attributes=run.attrs, start_time=run.start_ns)
            if self._runs.set_span(run, span):
                if not ended_before:
                    # It ended while this burst was running: its end attributes came
                    # after the span was started.
                    span.set_attributes(run.attrs)
                self._finish(span, run)
        except Exception as exc:
            record_internal_error("langchain.emit", exc)

    def _finish(self, span: Span, run: Run) -> None:
        try:
            if run.evicted:
                span.set_attribute(sc.RAGAS_RUN_EVICTED, True)
                span.set_status(self._evicted_status)
            elif run.error is not None:
                record_error(span, run.error, run.end_ns)
        finally:
            span.end(run.end_ns)


def record_error(span: Span, error: BaseException, at_ns: int | None) -> None:
    if isinstance(error, asyncio.CancelledError):
        # The request was cancelled (a timeout, a client gone): not an exception of
        # the app's, and its text is empty.
        span.set_attribute(sc.RAGAS_RUN_CANCELLED, True)
        span.set_status(_CANCELLED)
    elif isinstance(error, GeneratorExit):
        # The consumer of a stream stopped early: not the app's failure.
        span.set_attribute(sc.RAGAS_STREAM_STATUS, sc.STREAM_ABANDONED)
    else:
        span.record_exception(error, timestamp=at_ns)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


_CANCELLED = Status(StatusCode.ERROR, "cancelled")


def _parent_context(run: Run) -> Any:
    parent = run.parent if run.parent is not None else run.root
    return parent.child_context()
