"""What both receivers do with a decoded request: refuse it when the forward queue
has no room (the sender retries later), else convert it, deliver the spans and
report per-span rejections as OTLP partial success."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.gateway.convert import Limits, check_request, convert_request
from ragas_trace.gateway.forward import ForwardQueue
from ragas_trace.gateway.stats import GatewayStats


class Busy(Exception):
    """No room downstream right now; retry after ``retry_after_s``."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"gateway busy: downstream queue full, retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Ingest:
    """``deliver`` takes the accepted spans: the trace assembler when scoring, the
    forward queue's ``offer`` when not; then (``whole_requests``) a request whose
    spans all pass is handed over whole, without making a span object per span."""

    deliver: Callable[[Sequence[ReadableSpan]], None]
    forward: ForwardQueue
    stats: GatewayStats
    limits: Limits
    whole_requests: bool = False
    retry_after_s: int = 1

    def __call__(self, request: ExportTraceServiceRequest) -> ExportTraceServiceResponse:
        """Accept ``request`` or raise ``Busy``. Spans are accepted whole or not at all,
        so a refused request can be resent without duplicates."""
        count = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        if not self.forward.admits(count):
            self.stats.refused("busy")
            raise Busy(self.retry_after_s)
        converted = (check_request if self.whole_requests else convert_request)(
            request, self.limits)
        self.deliver(converted.spans)
        self.stats.received(len(converted.spans), converted.rejected)
        response = ExportTraceServiceResponse()
        if converted.rejected:
            response.partial_success.CopyFrom(ExportTracePartialSuccess(
                rejected_spans=converted.rejected, error_message=converted.reason))
        return response
