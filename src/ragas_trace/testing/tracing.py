"""An isolated TracerProvider writing to memory, for asserting on finished spans."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer


class InMemoryTracing:
    """A private provider (never the global one) and its in-memory exporter.

    ``processor`` replaces the default ``SimpleSpanProcessor(exporter)`` when a test
    wants to put its own processor in front of the exporter.
    """

    def __init__(self, processor: SpanProcessor | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(processor or SimpleSpanProcessor(self.exporter))

    @property
    def tracer(self) -> Tracer:
        return self.provider.get_tracer("ragas_trace.testing")

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()

    def by_trace(self) -> dict[int, list[ReadableSpan]]:
        traces: dict[int, list[ReadableSpan]] = {}
        for span in self.spans():
            if span.context is not None:
                traces.setdefault(span.context.trace_id, []).append(span)
        return traces

    def named(self, name: str) -> Sequence[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def clear(self) -> None:
        self.exporter.clear()

    def shutdown(self) -> None:
        self.provider.shutdown()
