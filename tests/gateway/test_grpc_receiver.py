"""OTLP/gRPC receiver: auth, TLS, size limit, partial success, back-pressure."""

import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from gateway_helpers import settings
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult

from ragas_trace.gateway.service import Gateway
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver
from ragas_trace.testing.rag_traces import plain_request


def _spans(n: int = 1) -> list:
    tracing = InMemoryTracing()
    for i in range(n):
        plain_request(tracing.tracer, i)
    return list(tracing.spans())


def _stub(gateway: Gateway) -> trace_service_pb2_grpc.TraceServiceStub:
    assert gateway.grpc is not None
    return trace_service_pb2_grpc.TraceServiceStub(
        grpc.insecure_channel(gateway.grpc.endpoint))


def test_partial_success_and_malformed_spans(downstream: OtlpGrpcReceiver) -> None:
    request = encode_spans(_spans())
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.trace_id, bad.span_id = b"\x01" * 4, b"\x02" * 8
    with Gateway(settings(forward_endpoint=downstream.endpoint)) as gw:
        response = _stub(gw).Export(request, timeout=5)
        assert downstream.wait_for(lambda spans: len(spans) == 2, timeout=5)
    assert response.partial_success.rejected_spans == 1
    assert "trace_id" in response.partial_success.error_message


def test_malformed_protobuf_is_invalid_argument(downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint)) as gw:
        assert gw.grpc is not None
        channel = grpc.insecure_channel(gw.grpc.endpoint)
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        with pytest.raises(grpc.RpcError) as err:
            export(b"\x0a\xff\xff\xff\xff\x0fjunk", timeout=5)
        assert err.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed protobuf" in (err.value.details() or "")
        assert gw.stats.requests_refused["grpc_invalid_argument"] == 1
        assert _stub(gw).Export(encode_spans(_spans()), timeout=5) is not None
        assert downstream.wait_for(lambda spans: len(spans) == 2, timeout=5)


def test_oversized_message_is_refused_and_service_keeps_running(
        downstream: OtlpGrpcReceiver) -> None:
    big = ExportTraceServiceRequest()
    span = big.resource_spans.add().scope_spans.add().spans.add()
    span.name = "x" * 8192
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          max_request_bytes=4096)) as gw:
        with pytest.raises(grpc.RpcError) as err:
            _stub(gw).Export(big, timeout=5)
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.RpcError) as err:
            _stub(gw).Export(big, timeout=5, compression=grpc.Compression.Gzip)
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert gw.grpc is not None
        exporter = OTLPSpanExporter(endpoint=gw.grpc.endpoint, insecure=True)
        assert exporter.export(_spans()) is SpanExportResult.SUCCESS
        assert downstream.wait_for(lambda spans: len(spans) == 2, timeout=5)


def test_bearer_token(downstream: OtlpGrpcReceiver, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t0ken")
    with Gateway(settings(forward_endpoint=downstream.endpoint, token_file=str(token))) as gw:
        with pytest.raises(grpc.RpcError) as err:
            _stub(gw).Export(encode_spans(_spans()), timeout=5)
        assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert gw.grpc is not None
        wrong = OTLPSpanExporter(endpoint=gw.grpc.endpoint, insecure=True,
                                 headers={"authorization": "Bearer nope"}, timeout=2)
        assert wrong.export(_spans()) is SpanExportResult.FAILURE
        right = OTLPSpanExporter(endpoint=gw.grpc.endpoint, insecure=True,
                                 headers={"authorization": "Bearer t0ken"})
        assert right.export(_spans()) is SpanExportResult.SUCCESS
        assert downstream.wait_for(lambda spans: len(spans) == 2, timeout=5)


def test_busy_answers_unavailable_with_retry_info() -> None:
    with Gateway(settings(forward_endpoint="127.0.0.1:9", queue_spans=10,
                          retry_for_s=1.0, forward_timeout_s=0.2)) as gw:
        stub = _stub(gw)
        codes = []
        for _ in range(6):
            try:
                stub.Export(encode_spans(_spans(2)), timeout=5)
                codes.append(grpc.StatusCode.OK)
            except grpc.RpcError as err:
                codes.append(err.code())
                trailers = dict(err.trailing_metadata() or ())
                retry = RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
                assert retry.retry_delay.seconds == 1
        assert grpc.StatusCode.UNAVAILABLE in codes
        assert gw.forward.pending() <= 10


@pytest.mark.skipif(shutil.which("openssl") is None,
                    reason="needs the openssl command (apt-get install openssl)")
def test_tls(downstream: OtlpGrpcReceiver, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> None:
    # requests lets these variables override the exporter's own CA file.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    with Gateway(settings(forward_endpoint=downstream.endpoint, tls_cert=str(cert),
                          tls_key=str(key))) as gw:
        assert gw.grpc is not None and gw.http is not None
        credentials = grpc.ssl_channel_credentials(cert.read_bytes())
        exporter = OTLPSpanExporter(endpoint=gw.grpc.endpoint, credentials=credentials)
        assert exporter.export(_spans()) is SpanExportResult.SUCCESS
        plaintext = OTLPSpanExporter(endpoint=gw.grpc.endpoint, insecure=True, timeout=1)
        assert plaintext.export(_spans()) is SpanExportResult.FAILURE
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpExporter,
        )
        assert gw.http.endpoint.startswith("https://")
        https = HttpExporter(endpoint=gw.http.endpoint + "/v1/traces",
                             certificate_file=str(cert))
        assert https.export(_spans()) is SpanExportResult.SUCCESS
        assert downstream.wait_for(lambda spans: len(spans) == 4, timeout=5)
