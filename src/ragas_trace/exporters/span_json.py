"""Finished spans as plain JSON objects and back, for the spool (``exporters.spool``):
no protobuf, so it needs no extra. Everything a ``ReadableSpan`` carries that an
exporter sends survives the round trip: ids, parent, name, kind, times, status,
attributes (sequences come back as tuples), events, links, resource and
instrumentation scope."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import Attributes


def span_to_json(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.context
    if ctx is None:
        raise ValueError("a span without a context cannot be spooled")
    scope = span.instrumentation_scope
    return {
        "name": span.name,
        "ctx": _ctx(ctx),
        "parent": _ctx(span.parent) if span.parent is not None else None,
        "kind": span.kind.name,
        "start": span.start_time,
        "end": span.end_time,
        "status": [span.status.status_code.name, span.status.description],
        "attrs": dict(span.attributes or {}),
        "events": [[e.name, e.timestamp, dict(e.attributes or {})] for e in span.events],
        "links": [[_ctx(link.context), dict(link.attributes or {})] for link in span.links],
        "resource": [dict(span.resource.attributes), span.resource.schema_url],
        "scope": ([scope.name, scope.version, scope.schema_url]
                  if scope is not None else None),
    }


def span_from_json(data: Mapping[str, Any]) -> ReadableSpan:
    """Raises ``KeyError`` / ``TypeError`` / ``ValueError`` for a malformed object."""
    code, description = data["status"]
    resource_attrs, schema_url = data["resource"]
    scope = data.get("scope")
    return ReadableSpan(
        name=str(data["name"]),
        context=_context(data["ctx"]),
        parent=_context(data["parent"]) if data.get("parent") is not None else None,
        resource=Resource(_attributes(resource_attrs) or {}, schema_url or ""),
        attributes=_attributes(data["attrs"]),
        events=[Event(str(name), _attributes(attrs), int(ts))
                for name, ts, attrs in data["events"]],
        links=[Link(_context(ctx), _attributes(attrs)) for ctx, attrs in data["links"]],
        kind=SpanKind[data["kind"]],
        status=Status(StatusCode[code], description),
        start_time=_time(data["start"]),
        end_time=_time(data["end"]),
        instrumentation_scope=(InstrumentationScope(scope[0], scope[1], scope[2])
                               if scope is not None else None),
    )


def _ctx(ctx: SpanContext) -> list[Any]:
    return [f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", int(ctx.trace_flags),
            ctx.is_remote]


def _context(data: Any) -> SpanContext:
    trace_id, span_id, flags, remote = data
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=bool(remote),
                       trace_flags=TraceFlags(int(flags)))


def _attributes(data: Any) -> Attributes:
    if not isinstance(data, dict):
        raise TypeError(f"attributes must be an object, got {type(data).__name__}")
    return {str(k): tuple(v) if isinstance(v, list) else v for k, v in data.items()}


def _time(value: Any) -> int | None:
    return int(value) if value is not None else None
