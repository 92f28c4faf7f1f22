"""An OTLP/gRPC router on 127.0.0.1 that splits each request by trace ID over a set
of backends exactly as the OpenTelemetry Collector's ``loadbalancing`` exporter does
with ``routing_key: traceID``: a consistent-hash ring of 100 CRC-32 positions per
endpoint (out of 36,000), a trace going to the first ring position at or after the
CRC-32 of its 16 id bytes. Used to test gateway replicas without a Collector binary.
"""

from __future__ import annotations

import bisect
import threading
import zlib
from collections import Counter
from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

_MAX_POSITIONS = 36_000
_WEIGHT = 100


class HashRing:
    """The loadbalancing exporter's ring over ``endpoints`` (their strings matter)."""

    def __init__(self, endpoints: list[str]) -> None:
        if not endpoints:
            raise ValueError("a ring needs at least one endpoint")
        used: set[int] = set()
        items: list[tuple[int, str]] = []
        for endpoint in endpoints:
            for i in range(_WEIGHT):
                pos = zlib.crc32(endpoint.encode() + bytes([i % 256])) % _MAX_POSITIONS
                if pos not in used:
                    used.add(pos)
                    items.append((pos, endpoint))
        items.sort()
        self._positions = [pos for pos, _ in items]
        self._endpoints = [endpoint for _, endpoint in items]

    def endpoint_for(self, trace_id: bytes) -> str:
        pos = zlib.crc32(trace_id) % _MAX_POSITIONS
        index = bisect.bisect_left(self._positions, pos)
        return self._endpoints[index % len(self._endpoints)]


class TraceIdRouter:
    """Receives OTLP/gRPC traces and forwards each trace's spans to its backend.

    A request is acknowledged only once every part was accepted downstream; a
    refusal is passed back to the sender with its status code.
    """

    def __init__(self, backends: list[str], host: str = "127.0.0.1", port: int = 0) -> None:
        self.ring = HashRing(backends)
        self._stubs = {
            b: trace_service_pb2_grpc.TraceServiceStub(  # type: ignore[no-untyped-call]
                grpc.insecure_channel(b))
            for b in backends}
        self._lock = threading.Lock()
        self.routed: Counter[str] = Counter()
        router = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> Any:
                return router._route(request, context)

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            Service(), self._server)
        self.port = self._server.add_insecure_port(f"{host}:{port}")
        self.endpoint = f"{host}:{self.port}"

    def _route(self, request: ExportTraceServiceRequest, context: Any) -> Any:
        parts: dict[str, ExportTraceServiceRequest] = {}
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                groups: dict[str, Any] = {}
                for span in ss.spans:
                    backend = self.ring.endpoint_for(span.trace_id)
                    out_ss = groups.get(backend)
                    if out_ss is None:
                        part = parts.setdefault(backend, ExportTraceServiceRequest())
                        out_rs = part.resource_spans.add()
                        out_rs.resource.CopyFrom(rs.resource)
                        out_rs.schema_url = rs.schema_url
                        out_ss = groups[backend] = out_rs.scope_spans.add()
                        out_ss.scope.CopyFrom(ss.scope)
                        out_ss.schema_url = ss.schema_url
                    out_ss.spans.append(span)
        for backend, part in parts.items():
            try:
                self._stubs[backend].Export(part, timeout=10)
            except grpc.RpcError as err:
                context.abort(err.code(), f"backend {backend}: {err.details()}")
            with self._lock:
                self.routed[backend] += sum(len(ss.spans) for rs in part.resource_spans
                                            for ss in rs.scope_spans)
        return ExportTraceServiceResponse()

    def __enter__(self) -> TraceIdRouter:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
