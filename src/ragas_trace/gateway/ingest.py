"""What both receivers do with a request body: parse it, refuse it when the forward
queue has no room (the sender retries later), else check or convert it, deliver the
spans and report per-span rejections as OTLP partial success."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
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
from ragas_trace.gateway.decode import Encoding, parse_request
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

    Every body is parsed whole, so nothing malformed reaches the forwarder; a
    protobuf body whose only fault is invalid UTF-8 is repaired (``utf8_repair``),
    so its valid spans are not refused with the bad ones. With ``whole_requests``
    (scoring off) spans are forwarded as received and never decoded: only ids are
    checked (``limits`` bound the work of decoding a span, so they do not apply),
    and a request whose ids all pass is handed over whole, with its bytes unless
    repaired. Without ``whole_requests`` every span becomes a ``ReceivedSpan``
    checked against ``limits``."""

    deliver: Callable[[Sequence[ReadableSpan]], None]
    forward: ForwardQueue
    stats: GatewayStats
    limits: Limits
    whole_requests: bool = False
    retry_after_s: int = 1

    def __call__(self, body: bytes, encoding: Encoding) -> ExportTraceServiceResponse:
        """Accept the request in ``body``, or raise ``BadRequest`` (malformed),
        ``Busy`` or ``TooLarge``. Spans are accepted whole or not at all, so a refused
        request can be resent without duplicates."""
        request, repaired = parse_request(body, encoding)
        count = span_count(request)
        self._admit(count, len(body))
        if self.whole_requests and ids_valid(request):
            raw = body if encoding == "protobuf" and not repaired else None
            converted = Converted(RequestSpans(count, request, raw=raw))
        else:
            converted = convert_request(request, None if self.whole_requests else self.limits)
        self.deliver(converted.spans)
        self.stats.received(len(converted.spans), converted.rejected, repaired)
        response = ExportTraceServiceResponse()
        if converted.rejected or repaired:
            # rejected_spans 0 with a message: an OTLP warning, nothing to resend.
            notes = [converted.reason] if converted.rejected else []
            if repaired:
                notes.append(f"{repaired} span(s) had strings that are not valid UTF-8: "
                             "forwarded with U+FFFD in place of the invalid bytes")
            response.partial_success.CopyFrom(ExportTracePartialSuccess(
                rejected_spans=converted.rejected, error_message="; ".join(notes)))
        return response

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
