"""OTLP/HTTP receiver: good requests, every kind of bad one, auth, back-pressure."""

import base64
import gzip
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gateway_helpers import http_sender, settings
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from ragas_trace.gateway.service import Gateway
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver
from ragas_trace.testing.rag_traces import plain_request

PB = "application/x-protobuf"


def _request(n_traces: int = 1) -> ExportTraceServiceRequest:
    tracing = InMemoryTracing()
    for i in range(n_traces):
        plain_request(tracing.tracer, i)
    return encode_spans(tracing.spans())


def _post(gateway: Gateway, body: bytes, headers: dict[str, str],
          path: str = "/v1/traces") -> tuple[int, dict[str, str], bytes]:
    assert gateway.http is not None
    host, port = gateway.http.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=10)
    try:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def _status(body: bytes) -> Any:
    status = status_pb2.Status()
    status.ParseFromString(body)
    return status


def _trace_ids(request: ExportTraceServiceRequest) -> set[str]:
    return {s.trace_id.hex() for rs in request.resource_spans for ss in rs.scope_spans
            for s in ss.spans}


def test_protobuf_and_json_requests_are_accepted(gateway: Gateway,
                                                 downstream: OtlpGrpcReceiver) -> None:
    as_pb, as_json = _request(), _request()
    code, headers, body = _post(gateway, as_pb.SerializeToString(), {"Content-Type": PB})
    assert code == 200 and headers["Content-Type"] == PB
    assert ExportTraceServiceResponse.FromString(body) == ExportTraceServiceResponse()
    data = json_format.MessageToDict(as_json)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:  # OTLP/JSON ids are hex, not protobuf-JSON base64
                        span[key] = base64.b64decode(span[key]).hex()
    code, headers, body = _post(gateway, json.dumps(data).encode(),
                                {"Content-Type": "application/json"})
    assert code == 200 and headers["Content-Type"] == "application/json"
    assert downstream.wait_for(lambda spans: len(spans) == 4, timeout=5)
    assert {s.trace_id for s in downstream.spans()} == _trace_ids(as_pb) | _trace_ids(as_json)


def _with_attributes(request: ExportTraceServiceRequest, n: int) -> None:
    span = request.resource_spans[0].scope_spans[0].spans[0]
    for i in range(n):
        kv = span.attributes.add()
        kv.key, kv.value.int_value = f"k{i}", i


def _partial_success(downstream: OtlpGrpcReceiver, request: ExportTraceServiceRequest,
                     forwarded: int, **flags: Any) -> Any:
    """POST ``request`` to a gateway set with ``flags``; the answer's partial success,
    once ``forwarded`` spans are downstream."""
    with Gateway(settings(forward_endpoint=downstream.endpoint, **flags)) as gw:
        code, _, body = _post(gw, request.SerializeToString(), {"Content-Type": PB})
        assert downstream.wait_for(lambda spans: len(spans) == forwarded, timeout=5)
    assert code == 200
    return ExportTraceServiceResponse.FromString(body).partial_success


def test_when_scoring_a_span_over_the_count_limits_is_rejected(
        downstream: OtlpGrpcReceiver) -> None:
    request = _request()
    _with_attributes(request, 50)
    partial = _partial_success(downstream, request, 1, max_attributes=20, judge="local",
                               sample_rate=0.0)
    assert partial.rejected_spans == 1
    assert "attributes (limit 20)" in partial.error_message


def test_scoring_off_rejects_bad_ids_and_forwards_big_spans_undecoded(
        downstream: OtlpGrpcReceiver) -> None:
    request = _request(2)
    _with_attributes(request, 50)  # not decoded with scoring off: the limit is moot
    big = request.resource_spans[0].scope_spans[0].spans[0]
    big_id, big_attributes = big.span_id.hex(), len(big.attributes)
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x07" * 3
    partial = _partial_success(downstream, request, 3, max_attributes=20)
    assert partial.rejected_spans == 1
    assert "span_id" in partial.error_message
    [forwarded] = [s for s in downstream.spans() if s.span_id == big_id]
    assert len(forwarded.attributes) == big_attributes > 50


def _malformed_inside_a_span() -> bytes:
    """A request whose framing is sound but one span's attribute is not protobuf."""
    def field(number: int, payload: bytes) -> bytes:
        return bytes([number << 3 | 2, len(payload)]) + payload
    span = PbSpan(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="s").SerializeToString()
    return field(1, field(2, field(2, span + field(9, b"\xff\xff"))))


@pytest.mark.parametrize(("judge", "protocol"), [("off", "http"), ("off", "grpc"),
                                                 ("local", "grpc")])
def test_a_body_malformed_inside_a_span_is_refused_in_every_mode(
        downstream: OtlpGrpcReceiver, judge: str, protocol: str) -> None:
    # Every body is parsed whole, also with scoring off and gRPC forwarding (which
    # used to parse only down to the ids and pass such a body on to be dropped there).
    body = _malformed_inside_a_span()
    with OtlpHttpReceiver() as http_downstream, Gateway(settings(
            forward_endpoint=http_downstream.endpoint if protocol == "http"
            else downstream.endpoint, forward_protocol=protocol, judge=judge,
            sample_rate=0.0)) as gw:
        code, _, answer = _post(gw, body, {"Content-Type": PB})
        assert code == 400
        assert "malformed protobuf" in _status(answer).message
        assert gw.stats.snapshot()["spans_dropped"] == {}


@pytest.mark.parametrize(("body", "headers", "expected"), [
    (b"\x0a\xff\xff\xff\xff\x0fjunk", {"Content-Type": PB}, 400),
    (b"{not json", {"Content-Type": "application/json"}, 400),
    (b"hello", {"Content-Type": "text/plain"}, 415),
    (b"hello", {}, 415),
    (gzip.compress(b"\0" * (8 << 20)), {"Content-Type": PB, "Content-Encoding": "gzip"}, 413),
    (b"garbage", {"Content-Type": PB, "Content-Encoding": "gzip"}, 400),
    (b"x", {"Content-Type": PB, "Content-Encoding": "br"}, 415),
])
def test_bad_requests_get_an_otlp_error_and_the_service_keeps_running(
        gateway: Gateway, downstream: OtlpGrpcReceiver, body: bytes,
        headers: dict[str, str], expected: int) -> None:
    code, answer_headers, answer = _post(gateway, body, headers)
    assert code == expected
    if answer_headers.get("Content-Type") == PB:
        assert _status(answer).message
    code, _, _ = _post(gateway, _request().SerializeToString(), {"Content-Type": PB})
    assert code == 200
    assert downstream.wait_for(lambda spans: len(spans) == 2, timeout=5)


def test_too_large_and_wrong_path(downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          max_request_bytes=2048)) as gw:
        code, _, body = _post(gw, b"\0" * 4096, {"Content-Type": PB})
        assert code == 413 and "exceeds" in _status(body).message
        code, _, _ = _post(gw, b"", {"Content-Type": PB}, path="/v1/logs")
        assert code == 404
        assert gw.stats.snapshot()["requests_refused"] == {"http_413": 1, "http_404": 1}


def test_health_endpoint(gateway: Gateway) -> None:
    assert gateway.http is not None
    host, port = gateway.http.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=5)
    conn.request("GET", "/health")
    response = conn.getresponse()
    health = json.loads(response.read())
    assert response.status == 200
    assert health["status"] == "ok"
    assert "forward_queue_spans" in health


@pytest.fixture
def token_file(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "token"
    path.write_text("s3cret\n")
    yield str(path)


def test_bearer_token_is_required(downstream: OtlpGrpcReceiver, token_file: str) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint, token_file=token_file)) as gw:
        assert gw.http is not None
        body = _request().SerializeToString()
        assert _post(gw, body, {"Content-Type": PB})[0] == 401
        assert _post(gw, body, {"Content-Type": PB, "Authorization": "Bearer nope"})[0] == 401
        app = http_sender(gw.http.endpoint, headers={"Authorization": "Bearer s3cret"})
        plain_request(app.get_tracer("t"), 0)
        assert downstream.wait_for(lambda spans: len(spans) == 2, timeout=5)


def test_downstream_down_pushes_back_then_counts_drops() -> None:
    # Nothing listens on the forward port: spans queue, then senders are told to retry.
    with Gateway(settings(forward_endpoint="127.0.0.1:9", queue_spans=10,
                          retry_for_s=0.5, forward_timeout_s=0.2)) as gw:
        codes = [_post(gw, _request(2).SerializeToString(), {"Content-Type": PB})
                 for _ in range(6)]
        busy = [c for c in codes if c[0] == 503]
        assert busy, [c[0] for c in codes]
        assert busy[0][1]["Retry-After"] == "1"
        assert _status(busy[0][2]).code == 14  # UNAVAILABLE
        accepted = 4 * sum(1 for c in codes if c[0] == 200)
        assert gw.forward.force_flush(10_000)
        snap = gw.stats.snapshot()
    assert snap["requests_refused"]["busy"] == len(busy)
    assert snap["spans_dropped"]["downstream_unavailable"] == accepted


def test_official_exporters_with_gzip(gateway: Gateway, downstream: OtlpGrpcReceiver) -> None:
    import grpc
    from gateway_helpers import grpc_sender
    from opentelemetry.exporter.otlp.proto.http import Compression

    assert gateway.http is not None and gateway.grpc is not None
    http_app = http_sender(gateway.http.endpoint, compression=Compression.Gzip)
    plain_request(http_app.get_tracer("t"), 0)
    grpc_app = grpc_sender(gateway.grpc.endpoint, compression=grpc.Compression.Gzip)
    plain_request(grpc_app.get_tracer("t"), 1)
    assert downstream.wait_for(lambda spans: len(spans) == 4, timeout=5)
