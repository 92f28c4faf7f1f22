"""The gRPC forwarder: with scoring off, a request whose spans all pass leaves as the
bytes it came in; spans the gateway made are encoded as the SDK would."""

import threading
from concurrent import futures

import grpc
import pytest
from gateway_helpers import settings
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from ragas_trace.gateway.downstream import make_exporter
from ragas_trace.gateway.service import Gateway
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.rag_traces import openinference_request, plain_request


class RawSink:
    """An OTLP/gRPC server that keeps each request's bytes unparsed."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.arrived = threading.Event()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(
                self._export, request_deserializer=None,
                response_serializer=ExportTraceServiceResponse.SerializeToString)}),))
        self.endpoint = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def _export(self, body: bytes, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        self.bodies.append(body)
        self.arrived.set()
        return ExportTraceServiceResponse()


def test_scoring_off_forwards_the_request_bytes_unchanged() -> None:
    tracing = InMemoryTracing()
    openinference_request(tracing.tracer, 1)
    plain_request(tracing.tracer, 2)
    # A field OTLP does not define (127), put first: re-encoding would move it last.
    body = b"\xfa\x07\x03abc" + encode_spans(tracing.spans()).SerializeToString()
    sink = RawSink()
    try:
        with Gateway(settings(forward_endpoint=sink.endpoint)) as gw:
            assert gw.grpc is not None
            export = grpc.insecure_channel(gw.grpc.endpoint).unary_unary(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                response_deserializer=ExportTraceServiceResponse.FromString)
            response = export(body, timeout=5)
            assert sink.arrived.wait(5)
        assert not response.HasField("partial_success")
        assert sink.bodies == [body]
    finally:
        sink.server.stop(0)


def test_spans_the_gateway_made_are_encoded() -> None:
    tracing = InMemoryTracing()
    plain_request(tracing.tracer, 1)
    spans = list(tracing.spans())
    sink = RawSink()
    try:
        exporter = make_exporter("grpc", sink.endpoint)
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        [body] = sink.bodies
        assert body == encode_spans(spans).SerializeToString()
        exporter.shutdown()
    finally:
        sink.server.stop(0)


def _export_raising(message: str) -> SpanExportResult:
    """Export through the gRPC exporter whose call raises ValueError(message)."""
    exporter = make_exporter("grpc", "127.0.0.1:9", timeout_s=0.2)

    def raising(request: object, **kwargs: object) -> None:
        raise ValueError(message)

    exporter._client.Export = raising  # type: ignore[attr-defined]
    tracing = InMemoryTracing()
    plain_request(tracing.tracer, 1)
    try:
        result: SpanExportResult = exporter.export(list(tracing.spans()))
        return result
    finally:
        exporter.shutdown()


@pytest.mark.parametrize("message", ["Cannot invoke RPC on closed channel!",
                                     "Cannot invoke RPC: Channel closed!"])
def test_a_channel_closed_under_an_export_is_a_failed_export(message: str) -> None:
    # After UNAVAILABLE the SDK rebuilds the channel another worker may be calling on;
    # grpc words that two ways, depending on how far that call had got.
    assert _export_raising(message) is SpanExportResult.FAILURE


def test_any_other_value_error_of_an_export_is_raised() -> None:
    with pytest.raises(ValueError, match="not a channel problem"):
        _export_raising("not a channel problem")
