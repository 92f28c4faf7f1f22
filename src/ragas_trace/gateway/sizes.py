"""How many bytes a span takes in an OTLP export request, so forward batches and the
memory the gateway holds can be bounded in bytes, not only in spans.

A received span is measured from its protobuf (exact); its resource and scope are
measured apart (``origin_bytes``), as a batch carries them once per origin. A span
the gateway made (a scored copy, an evaluation span) is measured by encoding it,
resource included: there is one or two of them per RAG trace."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.gateway.convert import ReceivedSpan, RequestSpans

# Field tags and length prefixes around a span, and around a resource/scope group.
_SPAN_FRAMING = 16
_ORIGIN_FRAMING = 64


def span_bytes(span: ReadableSpan) -> int:
    """The span's own size in a request (its origin's apart for a received span)."""
    if isinstance(span, ReceivedSpan):
        return int(span.pb.ByteSize()) + _SPAN_FRAMING
    return int(encode_spans([span]).ByteSize())


def origin_key(span: ReadableSpan) -> int | None:
    """Identifies the resource/scope group a received span is exported in."""
    return id(span.origin[1]) if isinstance(span, ReceivedSpan) else None


def origin_bytes(span: ReadableSpan) -> int:
    """What the span's resource and scope add to a batch the first time they appear."""
    if not isinstance(span, ReceivedSpan):
        return 0
    rs, ss = span.origin
    return int(rs.resource.ByteSize() + ss.scope.ByteSize()) + len(rs.schema_url) + \
        len(ss.schema_url) + _ORIGIN_FRAMING


def request_bytes(spans: RequestSpans) -> int:
    """A whole received request, as it will be sent."""
    return len(spans.raw) if spans.raw is not None else int(spans.request.ByteSize())
