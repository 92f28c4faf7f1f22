"""A backend that keeps nothing it is sent and watches it through weak references: a
test of retention asks whether anything else still holds those spans."""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class WatchingExporter(SpanExporter):
    def __init__(self) -> None:
        self.refs: list[weakref.ref[ReadableSpan]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.refs.extend(weakref.ref(s) for s in spans)
        return SpanExportResult.SUCCESS


def alive(refs: list[weakref.ref[ReadableSpan]]) -> list[str]:
    """The names of the watched spans something still holds."""
    return [s.name for s in (r() for r in refs) if s is not None]
