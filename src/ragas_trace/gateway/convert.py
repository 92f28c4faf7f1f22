"""OTLP protobuf spans -> SDK ``ReadableSpan``s, resource and scope kept, so the
scoring processor, ``ragas_trace.extract`` and the SDK's OTLP exporters work on
received spans exactly as on spans made in-process.

Each span is checked against ``Limits``; a span that breaks one is rejected alone
(counted for the OTLP partial-success answer), the rest of the request goes on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState

# OTLP numbers kinds from 1 (0 = unspecified); the SDK from 0 with no "unspecified".
_KINDS = {
    PbSpan.SPAN_KIND_UNSPECIFIED: SpanKind.INTERNAL,
    PbSpan.SPAN_KIND_INTERNAL: SpanKind.INTERNAL,
    PbSpan.SPAN_KIND_SERVER: SpanKind.SERVER,
    PbSpan.SPAN_KIND_CLIENT: SpanKind.CLIENT,
    PbSpan.SPAN_KIND_PRODUCER: SpanKind.PRODUCER,
    PbSpan.SPAN_KIND_CONSUMER: SpanKind.CONSUMER,
}
_STATUS = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_MAX_VALUE_DEPTH = 8


@dataclass(frozen=True)
class Limits:
    """What one received span may carry; beyond that it is rejected, not truncated,
    so the sender learns about it from the partial-success answer."""

    max_attributes: int = 1024
    max_events: int = 1024
    max_links: int = 1024
    max_attribute_bytes: int = 1 << 20


@dataclass
class Converted:
    """Spans that passed, plus how many were rejected and why (first reason kept)."""

    spans: list[ReadableSpan] = field(default_factory=list)
    rejected: int = 0
    reason: str = ""

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if not self.reason:
            self.reason = reason


class ReceivedSpan(ReadableSpan):
    """A received span. ``pb`` keeps the span as it arrived so that forwarding it
    unchanged can reuse it instead of encoding it again (see ``forward``)."""

    def __init__(self, pb: PbSpan, origin: tuple[ResourceSpans, ScopeSpans],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pb = pb
        self.origin = origin
        self._received_attributes = self._attributes

    def unchanged_pb(self) -> PbSpan | None:
        """The received protobuf, unless someone replaced this span's attributes since."""
        return self.pb if self._attributes is self._received_attributes else None


class SpanRejected(ValueError):
    """One span is unusable; the message says why."""


def convert_request(request: ExportTraceServiceRequest, limits: Limits) -> Converted:
    out = Converted()
    for rs in request.resource_spans:
        resource = Resource(_attributes(rs.resource.attributes, limits), rs.schema_url or None)
        for ss in rs.scope_spans:
            scope = InstrumentationScope(
                ss.scope.name, ss.scope.version or None, ss.schema_url or None,
                _attributes(ss.scope.attributes, limits) or None,
            )
            for pb in ss.spans:
                try:
                    out.spans.append(convert_span(pb, (rs, ss), resource, scope, limits))
                except SpanRejected as exc:
                    out.reject(str(exc))
    return out


def convert_span(pb: PbSpan, origin: tuple[ResourceSpans, ScopeSpans], resource: Resource,
                 scope: InstrumentationScope, limits: Limits) -> ReceivedSpan:
    if len(pb.trace_id) != 16 or not any(pb.trace_id):
        raise SpanRejected("span with an invalid trace_id (must be 16 non-zero bytes)")
    if len(pb.span_id) != 8 or not any(pb.span_id):
        raise SpanRejected("span with an invalid span_id (must be 8 non-zero bytes)")
    if pb.parent_span_id and len(pb.parent_span_id) != 8:
        raise SpanRejected("span with an invalid parent_span_id (must be 8 bytes)")
    if len(pb.attributes) > limits.max_attributes:
        raise SpanRejected(f"span with {len(pb.attributes)} attributes "
                           f"(limit {limits.max_attributes})")
    if len(pb.events) > limits.max_events:
        raise SpanRejected(f"span with {len(pb.events)} events (limit {limits.max_events})")
    if len(pb.links) > limits.max_links:
        raise SpanRejected(f"span with {len(pb.links)} links (limit {limits.max_links})")
    trace_id = int.from_bytes(pb.trace_id, "big")
    trace_state = TraceState.from_header([pb.trace_state]) if pb.trace_state else None
    context = SpanContext(trace_id, int.from_bytes(pb.span_id, "big"), is_remote=False,
                          trace_flags=TraceFlags(pb.flags & 0xFF), trace_state=trace_state)
    parent = None
    if pb.parent_span_id and any(pb.parent_span_id):
        parent = SpanContext(trace_id, int.from_bytes(pb.parent_span_id, "big"),
                             is_remote=_is_remote(pb.flags),
                             trace_flags=TraceFlags(pb.flags & 0xFF))
    code = _STATUS.get(pb.status.code, StatusCode.UNSET)
    status = Status(code, pb.status.message if code is StatusCode.ERROR else None)
    return ReceivedSpan(
        pb,
        origin,
        name=pb.name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=_attributes(pb.attributes, limits),
        events=[Event(e.name, _attributes(e.attributes, limits), e.time_unix_nano, limit=None)
                for e in pb.events],
        links=[_link(link, limits) for link in pb.links],
        kind=_KINDS.get(pb.kind, SpanKind.INTERNAL),
        status=status,
        start_time=pb.start_time_unix_nano,
        end_time=pb.end_time_unix_nano,
        instrumentation_scope=scope,
    )


def _link(link: PbSpan.Link, limits: Limits) -> Link:
    if len(link.trace_id) != 16 or len(link.span_id) != 8:
        raise SpanRejected("span with a link of invalid trace_id/span_id")
    context = SpanContext(int.from_bytes(link.trace_id, "big"),
                          int.from_bytes(link.span_id, "big"),
                          is_remote=_is_remote(link.flags),
                          trace_flags=TraceFlags(link.flags & 0xFF))
    return Link(context, _attributes(link.attributes, limits))


def _is_remote(flags: int) -> bool:
    return bool(flags & _HAS_IS_REMOTE) and bool(flags & _IS_REMOTE)


def _attributes(kvs: Iterable[KeyValue], limits: Limits) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        value = any_value(kv.value, limits, 0)
        if value is not None:
            out[kv.key] = value
    return out


def any_value(value: AnyValue, limits: Limits, depth: int) -> Any:
    """An ``AnyValue`` as an SDK attribute value: arrays become tuples, kvlists dicts."""
    which = value.WhichOneof("value")
    if which == "string_value":
        if len(value.string_value) > limits.max_attribute_bytes:
            raise SpanRejected(f"attribute value over {limits.max_attribute_bytes} bytes")
        return value.string_value
    if which in ("bool_value", "int_value", "double_value"):
        return getattr(value, which)
    if which == "bytes_value":
        return value.bytes_value
    if depth >= _MAX_VALUE_DEPTH:
        raise SpanRejected(f"attribute value nested deeper than {_MAX_VALUE_DEPTH}")
    if which == "array_value":
        return tuple(v for v in (any_value(x, limits, depth + 1)
                                 for x in value.array_value.values) if v is not None)
    if which == "kvlist_value":
        return _kvlist(value.kvlist_value.values, limits, depth + 1)
    return None


def _kvlist(kvs: Iterable[KeyValue], limits: Limits, depth: int) -> Mapping[str, Any]:
    return {kv.key: any_value(kv.value, limits, depth) for kv in kvs}
