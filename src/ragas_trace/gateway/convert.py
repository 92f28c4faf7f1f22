"""OTLP protobuf spans -> SDK ``ReadableSpan``s, resource and scope kept, so the
scoring processor, ``ragas_trace.extract`` and the SDK's OTLP exporters work on
received spans exactly as on spans made in-process.

A ``ReceivedSpan`` is a view over the protobuf it came from: ids, attributes,
events and links are decoded the first time something reads them. Most spans
(everything that is not part of a RAG trace) are never read, only forwarded, and
forwarding reuses the protobuf (see ``downstream.encode_batch``), so they cost
little more than in a plain pass-through.

Each span is checked when it arrives: its ids always, and ``Limits`` (attribute,
event and link counts) when it may be decoded, that is when scoring. A span that
fails is rejected alone (counted for the OTLP partial-success answer) and the rest
of the request goes on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, overload

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

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
MAX_VALUE_DEPTH = 8
_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)
_PARENT_ID_LENGTHS = (0, 8)  # 0: a root span


@dataclass(frozen=True)
class Limits:
    """What one received span may carry; beyond that it is rejected, not truncated,
    so the sender learns about it from the partial-success answer."""

    max_attributes: int = 1024
    max_events: int = 1024
    max_links: int = 1024


@dataclass
class Converted:
    """Spans that passed, plus how many were rejected and why (first reason kept)."""

    spans: Sequence[ReadableSpan] = field(default_factory=list)
    rejected: int = 0
    reason: str = ""

    def reject(self, reason: str) -> None:
        self.rejected += 1
        if not self.reason:
            self.reason = reason


class ReceivedSpan(ReadableSpan):
    """A received span, decoded on first read. ``pb`` is the span as it arrived and
    ``origin`` its resource and scope messages, for forwarding it unchanged."""

    def __init__(self, pb: PbSpan, origin: tuple[ResourceSpans, ScopeSpans],
                 resource: Resource, scope: InstrumentationScope) -> None:
        # ReadableSpan.__init__ is not called: every field it would set is read
        # through the properties below instead.
        self.pb = pb
        self.origin = origin
        self._resource = resource
        self._instrumentation_scope = scope
        self._instrumentation_info = None
        # Decoded on first read; plain slots rather than a dict, as the extractor and
        # the processor read ``attributes`` and ``context`` several times per span.
        self._span_context: SpanContext | None = None
        self._parent_context: SpanContext | None = None
        self._attribute_view: MappingProxyType[str, Any] | None = None
        self._decoded: dict[str, Any] = {}

    def has_any_attribute(self, keys: frozenset[str]) -> bool:
        """Whether one of ``keys`` is among the attributes, without decoding them."""
        return any(kv.key in keys for kv in self.pb.attributes)

    def _get(self, name: str, build: Any) -> Any:
        value = self._decoded.get(name)
        if value is None:
            value = self._decoded[name] = build()
        return value

    @property
    def name(self) -> str:
        name: str = self.pb.name
        return name

    def get_span_context(self) -> SpanContext:
        context = self._span_context
        if context is None:
            context = self._span_context = self._build_context()
        return context

    @property
    def context(self) -> SpanContext:
        return self.get_span_context()

    @property
    def parent(self) -> SpanContext | None:
        if not self.pb.parent_span_id or self.pb.parent_span_id == _ZERO_SPAN_ID:
            return None
        parent = self._parent_context
        if parent is None:
            parent = self._parent_context = self._build_parent()
        return parent

    @property
    def kind(self) -> SpanKind:
        return _KINDS.get(self.pb.kind, SpanKind.INTERNAL)

    @property
    def start_time(self) -> int:
        start: int = self.pb.start_time_unix_nano
        return start

    @property
    def end_time(self) -> int:
        end: int = self.pb.end_time_unix_nano
        return end

    @property
    def status(self) -> Status:
        code = _STATUS.get(self.pb.status.code, StatusCode.UNSET)
        return Status(code, self.pb.status.message if code is StatusCode.ERROR else None)

    @property
    def attributes(self) -> Attributes:
        view = self._attribute_view
        if view is None:
            view = self._attribute_view = MappingProxyType(attributes_of(self.pb.attributes))
        return view

    @property
    def events(self) -> Sequence[Event]:
        events: tuple[Event, ...] = self._get("events", lambda: tuple(
            Event(e.name, attributes_of(e.attributes), e.time_unix_nano, limit=None)
            for e in self.pb.events))
        return events

    @property
    def links(self) -> Sequence[Link]:
        links: tuple[Link, ...] = self._get("links", lambda: tuple(
            Link(SpanContext(int.from_bytes(link.trace_id, "big"),
                             int.from_bytes(link.span_id, "big"),
                             is_remote=_is_remote(link.flags),
                             trace_flags=TraceFlags(link.flags & 0xFF)),
                 attributes_of(link.attributes))
            for link in self.pb.links))
        return links

    @property
    def dropped_attributes(self) -> int:
        dropped: int = self.pb.dropped_attributes_count
        return dropped

    @property
    def dropped_events(self) -> int:
        dropped: int = self.pb.dropped_events_count
        return dropped

    @property
    def dropped_links(self) -> int:
        dropped: int = self.pb.dropped_links_count
        return dropped

    def to_json(self, indent: int | None = 4) -> str:
        text: str = ReadableSpan(
            self.name, self.context, self.parent, self.resource, dict(self.attributes or {}),
            self.events, self.links, self.kind, None, self.status, self.start_time,
            self.end_time, self.instrumentation_scope).to_json(indent)
        return text

    def _build_context(self) -> SpanContext:
        pb = self.pb
        trace_state = TraceState.from_header([pb.trace_state]) if pb.trace_state else None
        return SpanContext(int.from_bytes(pb.trace_id, "big"), int.from_bytes(pb.span_id, "big"),
                           is_remote=False, trace_flags=TraceFlags(pb.flags & 0xFF),
                           trace_state=trace_state)

    def _build_parent(self) -> SpanContext:
        pb = self.pb
        return SpanContext(int.from_bytes(pb.trace_id, "big"),
                           int.from_bytes(pb.parent_span_id, "big"),
                           is_remote=_is_remote(pb.flags), trace_flags=TraceFlags(pb.flags & 0xFF))


class RequestSpans(Sequence[ReadableSpan]):
    """Every span of a received request whose ids all passed, as a sequence of
    ``ReceivedSpan``s made only if someone iterates it. ``request`` is the parsed
    message and ``raw`` the protobuf it arrived as (None for OTLP/JSON, or when
    repaired). The gRPC forwarder sends ``raw``, else ``request``; any other exporter
    reads the spans."""

    def __init__(self, count: int, request: ExportTraceServiceRequest, *,
                 raw: bytes | None = None) -> None:
        self.request = request
        self.raw = raw
        self._count = count
        self._spans: Sequence[ReadableSpan] | None = None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> ReadableSpan: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ReadableSpan]: ...

    def __getitem__(self, index: int | slice) -> ReadableSpan | Sequence[ReadableSpan]:
        spans = self._spans
        if spans is None:
            spans = self._spans = convert_request(self.request, None).spans
        return spans[index]


def span_count(request: ExportTraceServiceRequest) -> int:
    """Spans in an ``ExportTraceServiceRequest``."""
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)


def ids_valid(request: ExportTraceServiceRequest) -> bool:
    """Whether no span of ``request`` has an ``id_problem``.

    This runs for every span forwarded with scoring off, so ``id_problem``'s test is
    inlined and each protobuf field read once: a read costs about 0.1 µs."""
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for pb in ss.spans:
                trace_id, span_id, links = pb.trace_id, pb.span_id, pb.links
                if len(trace_id) != 16 or trace_id == _ZERO_TRACE_ID or len(span_id) != 8 \
                        or span_id == _ZERO_SPAN_ID \
                        or len(pb.parent_span_id) not in _PARENT_ID_LENGTHS \
                        or (links and not _link_ids_valid(links)):
                    return False
    return True


def convert_request(request: ExportTraceServiceRequest, limits: Limits | None) -> Converted:
    """Every span of ``request`` as a ``ReceivedSpan``, except those with bad ids
    or (unless ``limits`` is None) more attributes, events or links than allowed."""
    out = Converted()
    spans: list[ReadableSpan] = []
    for rs in request.resource_spans:
        resource = Resource(attributes_of(rs.resource.attributes), rs.schema_url or None)
        for ss in rs.scope_spans:
            scope = InstrumentationScope(
                ss.scope.name, ss.scope.version or None, ss.schema_url or None,
                attributes_of(ss.scope.attributes) or None,
            )
            origin = (rs, ss)
            for pb in ss.spans:
                reason = id_problem(pb) or (limits and count_problem(pb, limits))
                if reason:
                    out.reject(reason)
                else:
                    spans.append(ReceivedSpan(pb, origin, resource, scope))
    out.spans = spans
    return out


def id_problem(pb: PbSpan) -> str | None:
    """Why the next OTLP hop would refuse ``pb`` (an id of the wrong length or, for
    the span's own ids, all zeros), or None."""
    trace_id, span_id = pb.trace_id, pb.span_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE_ID:
        return "span with an invalid trace_id (must be 16 non-zero bytes)"
    if len(span_id) != 8 or span_id == _ZERO_SPAN_ID:
        return "span with an invalid span_id (must be 8 non-zero bytes)"
    if len(pb.parent_span_id) not in _PARENT_ID_LENGTHS:
        return "span with an invalid parent_span_id (must be 8 bytes)"
    links = pb.links
    if links and not _link_ids_valid(links):
        return "span with a link of invalid trace_id/span_id"
    return None


def count_problem(pb: PbSpan, limits: Limits) -> str | None:
    """Which of ``limits`` ``pb`` breaks, or None."""
    if len(pb.attributes) > limits.max_attributes:
        return f"span with {len(pb.attributes)} attributes (limit {limits.max_attributes})"
    if len(pb.events) > limits.max_events:
        return f"span with {len(pb.events)} events (limit {limits.max_events})"
    if len(pb.links) > limits.max_links:
        return f"span with {len(pb.links)} links (limit {limits.max_links})"
    return None


def _link_ids_valid(links: Iterable[PbSpan.Link]) -> bool:
    return all(len(link.trace_id) == 16 and len(link.span_id) == 8 for link in links)


def _is_remote(flags: int) -> bool:
    return bool(flags & _HAS_IS_REMOTE) and bool(flags & _IS_REMOTE)


def attributes_of(kvs: Iterable[KeyValue]) -> dict[str, Any]:
    """Key-values as SDK attributes; empty values and values nested deeper than
    ``MAX_VALUE_DEPTH`` are left out."""
    out: dict[str, Any] = {}
    for kv in kvs:
        try:
            value = any_value(kv.value, 0)
        except _TooDeep:
            continue
        if value is not None:
            out[kv.key] = value
    return out


class _TooDeep(Exception):
    pass


def any_value(value: AnyValue, depth: int) -> Any:
    """An ``AnyValue`` as an SDK attribute value: arrays become tuples, kvlists dicts."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which not in ("array_value", "kvlist_value"):
        return getattr(value, which)
    if depth >= MAX_VALUE_DEPTH:
        raise _TooDeep
    if which == "array_value":
        return tuple(v for v in (any_value(x, depth + 1) for x in value.array_value.values)
                     if v is not None)
    return _kvlist(value.kvlist_value.values, depth + 1)


def _kvlist(kvs: Iterable[KeyValue], depth: int) -> Mapping[str, Any]:
    return {kv.key: any_value(kv.value, depth) for kv in kvs}
