"""OTLP receivers on 127.0.0.1 that decode what arrives (traces, metrics, logs), so
tests can assert on the attributes as they were on the wire. HTTP (protobuf and JSON) needs only the
standard library and ``opentelemetry-proto``; gRPC needs ``grpcio`` (the ``otlp``
extra)."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord as PbLogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from ragas_trace.testing._http import LoopbackHTTPServer


def any_value(value: AnyValue) -> Any:
    """A protobuf ``AnyValue`` as a Python value."""
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which)


@dataclass
class WireSpan:
    """One received span, decoded."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[tuple[str, str, dict[str, Any]]]
    status_code: int
    resource: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_pb(cls, span: PbSpan, resource: dict[str, Any]) -> WireSpan:
        return cls(
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            parent_span_id=span.parent_span_id.hex(),
            name=span.name,
            attributes={kv.key: any_value(kv.value) for kv in span.attributes},
            events=[(e.name, {kv.key: any_value(kv.value) for kv in e.attributes})
                    for e in span.events],
            links=[(link.trace_id.hex(), link.span_id.hex(),
                    {kv.key: any_value(kv.value) for kv in link.attributes})
                   for link in span.links],
            status_code=span.status.code,
            resource=resource,
        )


@dataclass
class WireLogRecord:
    """One received log record, decoded (ids in hex, empty when unset)."""

    trace_id: str
    span_id: str
    event_name: str
    severity_number: int
    severity_text: str
    body: Any
    attributes: dict[str, Any]
    time_unix_nano: int
    scope: str = ""
    resource: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_pb(cls, record: PbLogRecord, scope: str, resource: dict[str, Any]
                ) -> WireLogRecord:
        return cls(
            trace_id=record.trace_id.hex(),
            span_id=record.span_id.hex(),
            event_name=record.event_name,
            severity_number=record.severity_number,
            severity_text=record.severity_text,
            body=any_value(record.body) if record.HasField("body") else None,
            attributes={kv.key: any_value(kv.value) for kv in record.attributes},
            time_unix_nano=record.time_unix_nano,
            scope=scope,
            resource=resource,
        )


class _Store:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[WireSpan] = []
        self._metrics: list[ExportMetricsServiceRequest] = []
        self._logs: list[WireLogRecord] = []
        self.requests = 0
        self.log_requests = 0

    def add_traces(self, request: ExportTraceServiceRequest) -> None:
        decoded: list[WireSpan] = []
        for rs in request.resource_spans:
            resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                decoded.extend(WireSpan.from_pb(s, resource) for s in ss.spans)
        with self._lock:
            self.requests += 1
            self._spans.extend(decoded)

    def add_metrics(self, request: ExportMetricsServiceRequest) -> None:
        with self._lock:
            self._metrics.append(request)

    def add_logs(self, request: ExportLogsServiceRequest) -> None:
        decoded: list[WireLogRecord] = []
        for rl in request.resource_logs:
            resource = {kv.key: any_value(kv.value) for kv in rl.resource.attributes}
            for sl in rl.scope_logs:
                decoded.extend(WireLogRecord.from_pb(r, sl.scope.name, resource)
                               for r in sl.log_records)
        with self._lock:
            self.log_requests += 1
            self._logs.extend(decoded)

    def spans(self) -> list[WireSpan]:
        with self._lock:
            return list(self._spans)

    def logs(self) -> list[WireLogRecord]:
        with self._lock:
            return list(self._logs)

    def wait_for_logs(self, predicate: Callable[[list[WireLogRecord]], bool],
                      timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.logs()):
                return True
            time.sleep(0.02)
        return predicate(self.logs())

    def metric_names(self) -> set[str]:
        with self._lock:
            return {m.name for req in self._metrics for rm in req.resource_metrics
                    for sm in rm.scope_metrics for m in sm.metrics}

    def wait_for(self, predicate: Callable[[list[WireSpan]], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.spans()):
                return True
            time.sleep(0.02)
        return predicate(self.spans())


class OtlpHttpReceiver(_Store):
    """``/v1/traces``, ``/v1/metrics`` and ``/v1/logs`` over HTTP, protobuf or JSON,
    gzip or not.

    ``signals=("traces",)`` answers 404 on the others, as a traces-only backend
    (Phoenix, Jaeger) does; a body over ``max_body_bytes`` is refused with 413, as
    collectors do past their limit (counted in ``too_large``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 signals: tuple[str, ...] = ("traces", "metrics", "logs"),
                 max_body_bytes: int | None = None) -> None:
        super().__init__()
        store = self
        self.too_large = 0
        paths = {f"/v1/{signal}" for signal in signals} & {"/v1/traces", "/v1/metrics",
                                                            "/v1/logs"}

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                if max_body_bytes is not None and length > max_body_bytes:
                    store.too_large += 1
                    self.rfile.read(length)
                    self.send_response(413)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(length)
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                is_json = self.headers.get("Content-Type", "").startswith("application/json")
                if self.path not in paths:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == "/v1/traces":
                    req: Any = ExportTraceServiceRequest()
                    add: Callable[[Any], None] = store.add_traces
                elif self.path == "/v1/logs":
                    req = ExportLogsServiceRequest()
                    add = store.add_logs
                else:
                    req = ExportMetricsServiceRequest()
                    add = store.add_metrics
                if is_json:
                    json_format.Parse(body, req)
                else:
                    req.ParseFromString(body)
                add(req)
                payload = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = LoopbackHTTPServer((host, port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> OtlpHttpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class OtlpGrpcReceiver(_Store):
    """The OTLP trace, metrics and logs gRPC services; a message over ``max_message_bytes``
    (gRPC's default 4 MiB unless given) is refused with RESOURCE_EXHAUSTED by gRPC."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *,
                 max_message_bytes: int | None = None) -> None:
        super().__init__()
        import grpc
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
            ExportMetricsServiceResponse,
        )
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        store = self

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: ExportTraceServiceRequest, context: Any) -> Any:
                store.add_traces(request)
                return ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):  # type: ignore[misc]
            def Export(self, request: ExportMetricsServiceRequest, context: Any) -> Any:
                store.add_metrics(request)
                return ExportMetricsServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):  # type: ignore[misc]
            def Export(self, request: ExportLogsServiceRequest, context: Any) -> Any:
                store.add_logs(request)
                return ExportLogsServiceResponse()

        options = [] if max_message_bytes is None else \
            [("grpc.max_receive_message_length", max_message_bytes)]
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), options=options)
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            Traces(), self._server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(  # type: ignore[no-untyped-call]
            Metrics(), self._server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(  # type: ignore[no-untyped-call]
            Logs(), self._server)
        self.port = self._server.add_insecure_port(f"{host}:{port}")
        self._host = host

    @property
    def endpoint(self) -> str:
        return f"http://{self._host}:{self.port}"

    def __enter__(self) -> OtlpGrpcReceiver:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
