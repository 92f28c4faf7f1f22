"""OTLP/gRPC trace receiver (``opentelemetry.proto.collector.trace.v1.TraceService``).

gRPC itself enforces the message size limit (after decompression, so gzip bombs
stop there) and answers malformed protobuf with an error; this module adds the
bearer token, TLS, a cap on concurrent calls, and the OTLP retryable answer
(UNAVAILABLE with a ``RetryInfo``) when the forward queue is full."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.gateway.ingest import Busy
from ragas_trace.gateway.security import Security
from ragas_trace.gateway.stats import GatewayStats

logger = logging.getLogger(__name__)

Handle = Callable[[ExportTraceServiceRequest], ExportTraceServiceResponse]


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self, handle: Handle, security: Security, stats: GatewayStats) -> None:
        self._handle = handle
        self._security = security
        self._stats = stats

    def Export(self, request: ExportTraceServiceRequest,
               context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        metadata = dict(context.invocation_metadata() or ())
        if not self._security.authorized(_text(metadata.get("authorization"))):
            self._stats.refused("grpc_unauthenticated")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            return self._handle(request)
        except Busy as exc:
            retry = RetryInfo(retry_delay=Duration(seconds=exc.retry_after_s))
            context.set_trailing_metadata(
                (("google.rpc.retryinfo-bin", retry.SerializeToString()),))
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        except Exception as exc:
            self._stats.refused("internal_error")
            record_internal_error("gateway.grpc_receiver", exc)
            context.abort(grpc.StatusCode.INTERNAL, "internal error")
        raise AssertionError("unreachable: context.abort raises")


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


class OtlpGrpcServer:
    def __init__(self, address: str, handle: Handle, *, stats: GatewayStats,
                 security: Security, max_request_bytes: int, workers: int = 8,
                 max_concurrent_rpcs: int = 64) -> None:
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers,
                                       thread_name_prefix="ragas-gateway-grpc"),
            options=[("grpc.max_receive_message_length", max_request_bytes),
                     ("grpc.so_reuseport", 0)],
            maximum_concurrent_rpcs=max_concurrent_rpcs,
        )
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _TraceService(handle, security, stats), self._server)
        credentials = security.grpc_credentials()
        if credentials is not None:
            self.port = self._server.add_secure_port(address, credentials)
        else:
            self.port = self._server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {address}")
        self._host = address.rsplit(":", 1)[0]

    @property
    def endpoint(self) -> str:
        return f"{self._host}:{self.port}"

    def start(self) -> None:
        self._server.start()

    def stop(self, grace_s: float = 2.0) -> None:
        self._server.stop(grace=grace_s).wait(grace_s + 1)
