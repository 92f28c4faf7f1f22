"""The gateway under abuse (issue 17): memory after large and malformed requests, and
the latency of a valid request while slow clients are connected.

``ragas-trace serve --judge local --sample-rate 0`` (scoring on, as in the issue)
runs in its own process, forwarding over OTLP/gRPC to a counting sink with gRPC's
default 4 MiB message limit.

memory   RSS of the gateway after warm-up (baseline), then after 40 requests of
         ~3 MiB (one span with a 3 MiB attribute each, 4 senders at once) and
         2,000 malformed ones (HTTP and gRPC), then 20 valid requests; RSS after
         (ratio to the baseline), peak RSS, and spans lost (accepted but not
         delivered: the issue lost 302 valid spans after the big ones).
latency  median and p95 of a valid OTLP/HTTP request on a new connection: with no
         slow client (baseline) and with 200 slow clients connected, trickling
         header bytes (reconnecting when cut, as an attacker would); once with the
         default limits, once with --max-http-connections 100 (the 200 exceed the
         budget). Ratios to the baseline of the same run; non-200 answers counted.

    python bench/gateway_abuse.py [--samples 60] [--json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from gateway_throughput import CountingDownstream, peak_rss_mb
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.rag_traces import openinference_request, plain_request
from results_file import write_results

PB = {"Content-Type": "application/x-protobuf"}
_MIB = 1 << 20


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_gateway(downstream: str, *extra: str) -> tuple[subprocess.Popen[str], str, str]:
    cmd = [sys.executable, "-m", "ragas_trace.cli.main", "serve", "--otlp-grpc",
           "127.0.0.1:0", "--otlp-http", "127.0.0.1:0", "--forward-endpoint", downstream,
           "--judge", "local", "--sample-rate", "0", "--quiet-s", "0.2",
           "--log-level", "error", *extra]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline())
    return proc, ready["otlp_http"], ready["otlp_grpc"]


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def request(first: int, traces: int, blob_bytes: int = 0, rag: bool = False) -> bytes:
    tracing = InMemoryTracing()
    for i in range(first, first + traces):
        (openinference_request if rag else plain_request)(tracing.tracer, i)
    message = encode_spans(tracing.spans())
    if blob_bytes:
        span = message.resource_spans[0].scope_spans[0].spans[0]
        span.attributes.add(key="blob", value=AnyValue(string_value="x" * blob_bytes))
    return message.SerializeToString()


def spans_in(body: bytes) -> int:
    message = ExportTraceServiceRequest.FromString(body)
    return sum(len(ss.spans) for rs in message.resource_spans for ss in rs.scope_spans)


def post(http_endpoint: str, body: bytes, headers: dict[str, str] | None = None) -> int:
    host, port = http_endpoint.rsplit("/", 1)[-1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        conn.request("POST", "/v1/traces", body=body, headers=headers or PB)
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def malformed(i: int) -> tuple[bytes, dict[str, str]]:
    """Bodies a careless or hostile sender posts: each is refused (400/413/415)."""
    kinds: list[tuple[bytes, dict[str, str]]] = [
        (bytes((i * 7 + k) % 256 for k in range(512)), PB),
        (b'{"resourceSpans": [{"scopeSpans": [', {"Content-Type": "application/json"}),
        (b"\x0a\xff\xff\xff\xff\x0f" + b"\x00" * 64, PB),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 32, {**PB, "Content-Encoding": "gzip"}),
        (b"x" * 100, {"Content-Type": "text/plain"}),
    ]
    return kinds[i % len(kinds)]


def memory_phase(sink: CountingDownstream) -> dict[str, float]:
    sink.reset()
    proc, http_endpoint, grpc_endpoint = start_gateway(f"127.0.0.1:{sink.port}")
    try:
        warm = [request(i, 5, rag=True) for i in range(10)]
        for body in warm:
            assert post(http_endpoint, body) == 200
        expected = sum(spans_in(b) for b in warm)
        _wait(lambda: sink.count >= expected, 30)
        time.sleep(1.0)
        before = rss_mb(proc.pid)

        big = [request(1000 + i, 1, blob_bytes=3 * _MIB) for i in range(40)]
        codes: list[int] = []
        lock = threading.Lock()

        def send(chunk: list[bytes]) -> None:
            for body in chunk:
                code = post(http_endpoint, body)
                with lock:
                    codes.append(code)

        senders = [threading.Thread(target=send, args=(big[k::4],)) for k in range(4)]
        for t in senders:
            t.start()
        for t in senders:
            t.join()
        expected += sum(spans_in(b) for b, c in zip(big, codes, strict=True) if c == 200)

        channel = grpc.insecure_channel(grpc_endpoint)
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString)
        refused = 0
        for i in range(2000):
            if i % 2:
                body, headers = malformed(i)
                refused += post(http_endpoint, body, headers) != 200
            else:
                try:
                    export(malformed(i)[0], timeout=10)
                except grpc.RpcError:
                    refused += 1
        channel.close()

        valid = [request(5000 + i * 10, 10) for i in range(20)]
        for body in valid:
            if post(http_endpoint, body) == 200:
                expected += spans_in(body)
        _wait(lambda: sink.count >= expected, 60)
        time.sleep(1.0)
        after = rss_mb(proc.pid)
        return {"rss_before_mb": before, "rss_after_mb": after, "rss_ratio": after / before,
                "peak_rss_mb": peak_rss_mb(proc.pid),
                "big_accepted": float(codes.count(200)), "malformed_refused": float(refused),
                "spans_lost": float(max(0, expected - sink.count))}
    finally:
        stop(proc)


class Tricklers:
    """``n`` connections each sending one header byte a second, reconnected when the
    gateway cuts them: a steady 200 slow clients."""

    def __init__(self, http_endpoint: str, n: int) -> None:
        host, port = http_endpoint.rsplit("/", 1)[-1].rsplit(":", 1)
        self._address = (host, int(port))
        self._socks = [self._open() for _ in range(n)]
        self.reconnects = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _open(self) -> socket.socket:
        sock = socket.create_connection(self._address, timeout=5)
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        return sock

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for i, sock in enumerate(self._socks):
                try:
                    sock.sendall(b"x")
                except OSError:
                    sock.close()
                    self.reconnects += 1
                    try:
                        self._socks[i] = self._open()
                    except OSError:
                        pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sock in self._socks:
            sock.close()


def latencies(http_endpoint: str, body: bytes, samples: int) -> tuple[list[float], int]:
    times, failed = [], 0
    for _ in range(samples):
        t0 = time.perf_counter()
        code = post(http_endpoint, body)
        times.append(time.perf_counter() - t0)
        failed += code != 200
    return times, failed


def latency_phase(sink: CountingDownstream, samples: int, *extra: str) -> dict[str, float]:
    proc, http_endpoint, _ = start_gateway(f"127.0.0.1:{sink.port}", *extra)
    body = request(9000, 2)
    try:
        latencies(http_endpoint, body, 10)  # warm-up
        quiet, quiet_failed = latencies(http_endpoint, body, samples)
        slow = Tricklers(http_endpoint, 200)
        try:
            time.sleep(2.0)
            loaded, loaded_failed = latencies(http_endpoint, body, samples)
        finally:
            slow.close()
        q50, l50 = statistics.median(quiet), statistics.median(loaded)
        q95 = statistics.quantiles(quiet, n=20)[-1]
        l95 = statistics.quantiles(loaded, n=20)[-1]
        return {"p50_ms_none": q50 * 1e3, "p50_ms_200_slow": l50 * 1e3,
                "p50_ratio": l50 / q50, "p95_ms_none": q95 * 1e3,
                "p95_ms_200_slow": l95 * 1e3, "p95_ratio": l95 / q95,
                "failed_none": float(quiet_failed), "failed_200_slow": float(loaded_failed),
                "slow_reconnects": float(slow.reconnects)}
    finally:
        stop(proc)


def _wait(predicate: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sink = CountingDownstream()
    memory = memory_phase(sink)
    default = latency_phase(sink, args.samples)
    budget = latency_phase(sink, args.samples, "--max-http-connections", "100")
    report = {"memory": memory, "latency_default_limits": default,
              "latency_over_budget": budget}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name, figures in report.items():
            print(name)
            for key, value in figures.items():
                print(f"  {key:20s} {value:10.2f}")
    write_results("gateway_abuse", {
        "rss_after_abuse_mb": {"value": round(memory["rss_after_mb"]), "unit": "MB",
                               "label": "gateway RSS after 40 x 3 MiB and 2,000 malformed "
                                        "requests (scoring on)",
                               "baseline": f"{memory['rss_before_mb']:.0f} MB after warm-up"},
        "rss_ratio_after_abuse": {"value": round(memory["rss_ratio"], 2),
                                  "label": "RSS after abuse / RSS after warm-up",
                                  "baseline": "RSS after warm-up, same process"},
        "peak_rss_mb": {"value": round(memory["peak_rss_mb"]), "unit": "MB",
                        "label": "gateway peak RSS during the abuse"},
        "spans_lost_after_big_requests": {"value": int(memory["spans_lost"]),
                                          "label": "accepted spans not delivered"},
        "latency_ratio_200_slow_clients": {
            "value": round(default["p50_ratio"], 2),
            "label": "median valid-request latency with 200 slow clients / with none",
            "baseline": f"{default['p50_ms_none']:.1f} ms with none, same run"},
        "latency_p95_ratio_200_slow_clients": {
            "value": round(default["p95_ratio"], 2),
            "label": "p95 valid-request latency with 200 slow clients / with none",
            "baseline": f"{default['p95_ms_none']:.1f} ms with none, same run"},
        "latency_ratio_200_slow_over_budget": {
            "value": round(budget["p50_ratio"], 2),
            "label": "same, --max-http-connections 100 (slow clients exceed the budget)",
            "baseline": f"{budget['p50_ms_none']:.1f} ms with none, same run"},
        "failed_valid_requests_200_slow": {
            "value": int(default["failed_200_slow"] + budget["failed_200_slow"]),
            "label": f"valid requests not answered 200, of {2 * args.samples}, "
                     "with 200 slow clients"},
    })


if __name__ == "__main__":
    main()
