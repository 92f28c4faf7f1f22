"""The gateway under abuse (issue 17, rows 1-3): big spans with a next hop that has
a message limit, slow clients, oversized bodies. Real sockets, real OTLP receivers
as the next hop."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gateway_helpers import settings
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ragas_trace.gateway.service import Gateway
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver
from ragas_trace.testing.rag_traces import plain_request

PB = {"Content-Type": "application/x-protobuf"}
MIB = 1 << 20


def _request(first: int, traces: int = 1, blob_bytes: int = 0) -> ExportTraceServiceRequest:
    """``traces`` plain traces (2 spans each); with ``blob_bytes`` the first span
    carries an attribute of that many bytes."""
    tracing = InMemoryTracing()
    for i in range(first, first + traces):
        plain_request(tracing.tracer, i)
    request = encode_spans(tracing.spans())
    if blob_bytes:
        span = request.resource_spans[0].scope_spans[0].spans[0]
        span.attributes.add(key="blob", value=AnyValue(string_value="x" * blob_bytes))
    return request


def _address(gw: Gateway) -> tuple[str, int]:
    assert gw.http is not None
    host, port = gw.http.server_address[:2]
    return str(host), port


def _post(gw: Gateway, body: bytes, timeout: float = 20) -> int:
    conn = http.client.HTTPConnection(*_address(gw), timeout=timeout)
    try:
        conn.request("POST", "/v1/traces", body=body, headers=PB)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def _post_all(gw: Gateway, bodies: list[bytes]) -> list[int]:
    """POST every body at once (one thread each), so the spans meet in the queue."""
    codes: list[int] = [0] * len(bodies)

    def send(i: int) -> None:
        codes[i] = _post(gw, bodies[i])

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return codes


def _ids(request: ExportTraceServiceRequest) -> set[str]:
    return {s.span_id.hex() for rs in request.resource_spans for ss in rs.scope_spans
            for s in ss.spans}


# --- row 1: forward batches bounded in bytes -------------------------------------

@pytest.mark.parametrize("judge", ["local", "off"])
def test_big_spans_reach_a_4_mib_grpc_hop_and_so_do_the_spans_after_them(judge: str) -> None:
    big = [_request(i, blob_bytes=3 * MIB) for i in range(3)]
    small = [_request(100 + i, traces=5) for i in range(4)]
    with OtlpGrpcReceiver() as hop, Gateway(settings(
            forward_endpoint=hop.endpoint, judge=judge, sample_rate=0.0,
            retry_for_s=2.0)) as gw:
        assert _post_all(gw, [r.SerializeToString() for r in big]) == [200] * 3
        assert [_post(gw, r.SerializeToString()) for r in small] == [200] * 4
        want = set().union(*(_ids(r) for r in big + small))
        assert hop.wait_for(lambda spans: want <= {s.span_id for s in spans}, timeout=20)
        snap = gw.stats.snapshot()
    assert snap["spans_dropped"] == {} and snap["export_retries"] == 0


@pytest.mark.parametrize("judge", ["local", "off"])
def test_a_span_larger_than_a_forward_batch_is_dropped_and_counted(judge: str) -> None:
    too_big = _request(0, blob_bytes=int(3.8 * MIB))
    after = _request(1, traces=3)
    with OtlpGrpcReceiver() as hop, Gateway(settings(
            forward_endpoint=hop.endpoint, judge=judge, sample_rate=0.0)) as gw:
        assert _post(gw, too_big.SerializeToString()) == 200
        assert _post(gw, after.SerializeToString()) == 200
        # The too-big span's sibling in the same request still leaves.
        want = _ids(after) | (_ids(too_big) - {_big_id(too_big)})
        assert hop.wait_for(lambda spans: want <= {s.span_id for s in spans}, timeout=10)
        assert gw.forward.force_flush(5_000)
        assert _big_id(too_big) not in {s.span_id for s in hop.spans()}
        assert gw.stats.snapshot()["spans_dropped"] == {"span_too_large": 1}


def _big_id(request: ExportTraceServiceRequest) -> str:
    return str(request.resource_spans[0].scope_spans[0].spans[0].span_id.hex())


@pytest.fixture(params=["grpc", "http"])
def small_hop(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    """A next hop that accepts messages up to 1 MiB only."""
    if request.param == "grpc":
        with OtlpGrpcReceiver(max_message_bytes=MIB) as grpc_hop:
            yield "grpc", grpc_hop
    else:
        with OtlpHttpReceiver(max_body_bytes=MIB) as http_hop:
            yield "http", http_hop


def test_a_refusal_for_size_is_not_retried(small_hop: tuple[str, Any]) -> None:
    protocol, hop = small_hop
    big = _request(0, blob_bytes=2 * MIB)
    after = _request(1, traces=3)
    with Gateway(settings(forward_endpoint=hop.endpoint, forward_protocol=protocol,
                          judge="local", sample_rate=0.0, retry_for_s=20.0)) as gw:
        assert _post(gw, big.SerializeToString()) == 200
        assert _post(gw, after.SerializeToString()) == 200
        assert hop.wait_for(lambda spans: _ids(after) <= {s.span_id for s in spans},
                            timeout=10)
        # Well inside retry_for_s: a retried batch would still be in the queue.
        assert gw.forward.force_flush(5_000)
        snap = gw.stats.snapshot()
    assert snap["export_retries"] == 0
    assert snap["spans_dropped"].get("downstream_refused", 0) >= 1
    assert "downstream_unavailable" not in snap["spans_dropped"]


def test_requests_past_the_queue_byte_budget_are_pushed_back() -> None:
    """A next hop that never answers: the queue fills in bytes long before its span
    count, and senders are told to retry later (503) instead of the gateway growing."""
    stalled = socket.create_server(("127.0.0.1", 0))  # accepts, never speaks gRPC
    try:
        port = stalled.getsockname()[1]
        body = _request(0, blob_bytes=MIB).SerializeToString()
        with Gateway(settings(forward_endpoint=f"127.0.0.1:{port}", queue_bytes=4 * MIB,
                              forward_timeout_s=30.0, retry_for_s=30.0)) as gw:
            codes = [_post(gw, body) for _ in range(8)]
            assert codes.count(200) <= 4 and 503 in codes
            assert gw.stats.snapshot()["requests_refused"].get("busy", 0) >= 1
            gw.stop(timeout_s=0.5)
    finally:
        stalled.close()


# --- row 2: slow clients -------------------------------------------------------------

class Trickler:
    """A client that sends the start of a request, then one byte every ``every_s``."""

    def __init__(self, gw: Gateway, head: bytes, every_s: float = 0.2) -> None:
        self.sock = socket.create_connection(_address(gw), timeout=10)
        self.sock.sendall(head)
        self.cut = threading.Event()
        self._stop = threading.Event()
        self._every_s = every_s
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                self.sock.sendall(b"x")
            except OSError:
                self.cut.set()
                return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def tricklers() -> Iterator[list[Trickler]]:
    opened: list[Trickler] = []
    yield opened
    for t in opened:
        t.close()


_HEADERS_HEAD = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Slow: "
_BODY_HEAD = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf" \
             b"\r\nContent-Length: 100000\r\n\r\n"


@pytest.mark.parametrize("head", [_HEADERS_HEAD, _BODY_HEAD], ids=["headers", "body"])
def test_trickling_clients_do_not_lock_out_valid_senders(
        downstream: OtlpGrpcReceiver, tricklers: list[Trickler], head: bytes) -> None:
    body = _request(0).SerializeToString()
    with Gateway(settings(forward_endpoint=downstream.endpoint, max_connections=4,
                          max_http_connections=8, request_timeout_s=60.0)) as gw:
        tricklers.extend(Trickler(gw, head) for _ in range(16))
        assert [_post(gw, body) for _ in range(10)] == [200] * 10
        assert gw.http is not None and gw.http.connections.open_count() <= 8
        refused = gw.stats.snapshot()["requests_refused"]
    assert refused.get("slow_connection_closed", 0) + refused.get("slow_body_closed", 0) > 0
    assert "too_many_connections" not in refused


def test_a_request_must_arrive_whole_within_its_deadline(
        downstream: OtlpGrpcReceiver, tricklers: list[Trickler]) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          request_timeout_s=0.5)) as gw:
        # A byte every 0.1 s: each read is quick, the request never completes.
        slow = Trickler(gw, _HEADERS_HEAD, every_s=0.1)
        tricklers.append(slow)
        slow.sock.settimeout(10)
        data = slow.sock.recv(4096)  # the server hangs up (b"" or an answer), no wait
        assert data == b"" or data.startswith(b"HTTP/1.1 408")
        assert gw.stats.snapshot()["requests_refused"].get("request_timeout") == 1


# --- row 3: an oversized body gets a 413 the client can read ----------------------------

def test_an_oversized_body_gets_a_413_the_client_can_read(
        downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          max_request_bytes=64 * 1024)) as gw:
        assert _post(gw, b"\0" * (8 * MIB)) == 413
        assert _post(gw, _request(0).SerializeToString()) == 200


def test_a_client_expecting_100_continue_is_told_413_before_sending(
        downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          max_request_bytes=64 * 1024)) as gw:
        with socket.create_connection(_address(gw), timeout=10) as sock:
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                         b"Content-Type: application/x-protobuf\r\n"
                         b"Content-Length: 10000000\r\n\r\n")
            answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 413")



def test_the_deadline_counts_from_the_requests_first_byte_not_the_idle_wait(
        downstream: OtlpGrpcReceiver) -> None:
    # An exporter reusing its keep-alive connection: the batch arrives late in the idle
    # allowance and its body takes a while; whole within its own deadline, it is taken.
    body = _request(0).SerializeToString()
    head = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf"
            b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n")
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          request_timeout_s=1.0)) as gw:
        with socket.create_connection(_address(gw), timeout=10) as sock:
            time.sleep(0.7)  # idle
            sock.sendall(head)
            time.sleep(0.5)  # 1.2 s after the wait began, 0.5 s into the request
            sock.sendall(body)
            answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
        assert "request_timeout" not in gw.stats.snapshot()["requests_refused"]


def test_an_idle_keep_alive_connection_is_closed_but_not_counted_as_refused(
        downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint,
                          request_timeout_s=0.3)) as gw:
        conn = http.client.HTTPConnection(*_address(gw), timeout=10)
        conn.request("POST", "/v1/traces", body=_request(0).SerializeToString(), headers=PB)
        response = conn.getresponse()
        response.read()
        assert response.status == 200
        assert conn.sock is not None
        assert conn.sock.recv(1) == b""  # closed by the gateway once idle past the deadline
        conn.close()
        assert "request_timeout" not in gw.stats.snapshot()["requests_refused"]
