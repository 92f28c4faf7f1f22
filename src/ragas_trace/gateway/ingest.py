"""What both receivers do with a request body: parse it, refuse it when the forward
queue has no room (the sender retries later), else check or convert it, deliver the
spans and report per-span rejections as OTLP partial success."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.gateway.convert import (
    Converted,
    Limits,
    RequestSpans,
    convert_request,
    ids_valid,
    span_count,
)
from ragas_trace.gateway.decode import Encoding, parse_ids_view, parse_request
from ragas_trace.gateway.forward import ForwardQueue
from ragas_trace.gateway.stats import GatewayStats


class Busy(Exception):
    """No room downstream right now; retry after ``retry_after_s``."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"gateway busy: downstream queue full, retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class TooLarge(Exception):
    """A request the forward queue could not take even empty: refused for good (HTTP
    413, gRPC RESOURCE_EXHAUSTED without RetryInfo), never "retry later"."""


@dataclass(frozen=True)
class Ingest:
    """``deliver`` takes the accepted spans: the trace assembler when scoring, the
    forward queue's ``offer`` when not.

    With ``whole_requests`` (scoring off) spans are forwarded as received and never
    decoded: only ids are checked (``limits`` bound the work of decoding a span, so
    they do not apply), and a request whose ids all pass is handed over whole. When
    the forwarder sends such a request as its bytes (``forwards_bytes``), a
    protobuf body is parsed only through the ids-only view (``span_ids``), so a
    body malformed inside a span is left for the next hop to refuse; otherwise it
    is parsed whole here, so that nothing malformed reaches the forwarder. Without
    ``whole_requests`` every span becomes a ``ReceivedSpan`` checked against
    ``limits``."""

    deliver: Callable[[Sequence[ReadableSpan]], None]
    forward: ForwardQueue
    stats: GatewayStats
    limits: Limits
    whole_requests: bool = False
    forwards_bytes: bool = False
    retry_after_s: int = 1

    def __call__(self, body: bytes, encoding: Encoding) -> ExportTraceServiceResponse:
        """Accept the request in ``body``, or raise ``BadRequest`` (malformed),
        ``Busy`` or ``TooLarge``. Spans are accepted whole or not at all, so a refused
        request can be resent without duplicates."""
        if self.whole_requests:
            converted = self._forward_whole(body, encoding)
        else:
            request = parse_request(body, encoding)
            self._admit(span_count(request), len(body))
            converted = convert_request(request, self.limits)
        self.deliver(converted.spans)
        self.stats.received(len(converted.spans), converted.rejected)
        response = ExportTraceServiceResponse()
        if converted.rejected:
            response.partial_success.CopyFrom(ExportTracePartialSuccess(
                rejected_spans=converted.rejected, error_message=converted.reason))
        return response

    def _forward_whole(self, body: bytes, encoding: Encoding) -> Converted:
        request: ExportTraceServiceRequest | None = None
        if encoding == "protobuf" and self.forwards_bytes:
            view = parse_ids_view(body)
        else:
            view = request = parse_request(body, encoding)
        count = span_count(view)
        self._admit(count, len(body))
        if ids_valid(view):
            raw = body if encoding == "protobuf" else None
            return Converted(RequestSpans(count, raw=raw, request=request))
        return convert_request(request or parse_request(body, encoding), None)

    def _admit(self, count: int, nbytes: int) -> None:
        if self.forward.admits(count, nbytes):
            return
        max_spans, max_bytes = self.forward.admit_capacity
        if count > max_spans or nbytes > max_bytes:
            # Waiting cannot help: "retry later" would have the sender retry for ever.
            self.stats.refused("over_queue_capacity")
            raise TooLarge(
                f"request of {count} spans, {nbytes} bytes: more than the gateway can "
                f"ever queue ({max_spans} spans, {max_bytes} bytes: 90% of --queue-spans "
                "and --queue-bytes); send smaller batches")
        self.stats.refused("busy")
        raise Busy(self.retry_after_s)
