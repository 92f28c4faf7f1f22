"""OTLP/gRPC trace receiver (``opentelemetry.proto.collector.trace.v1.TraceService``).

gRPC itself enforces the message size limit (after decompression, so gzip bombs
stop there). The method takes the request's bytes, not a parsed message: ``Ingest``
parses them (as much as it needs; malformed protobuf is answered INVALID_ARGUMENT)
and a request forwarded unchanged leaves as those bytes. This module adds the
bearer token, TLS, a cap on concurrent calls, the OTLP retryable answer
(UNAVAILABLE with a ``RetryInfo``) when the forward queue is full, and the final one
(RESOURCE_EXHAUSTED without it) for a request it could never hold."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.gateway.decode import BadRequest, Encoding
from ragas_trace.gateway.ingest import Busy, TooLarge
from ragas_trace.gateway.security import Security
from ragas_trace.gateway.stats import GatewayStats

logger = logging.getLogger(__name__)

Handle = Callable[[bytes, Encoding], ExportTraceServiceResponse]
_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


class _TraceService:
    def __init__(self, handle: Handle, security: Security, stats: GatewayStats) -> None:
        self._handle = handle
        self._security = security
        self._stats = stats

    def Export(self, body: bytes, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        metadata = dict(context.invocation_metadata() or ())
        if not self._security.authorized(_text(metadata.get("authorization"))):
            self._stats.refused("grpc_unauthenticated")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        try:
            return self._handle(body, "protobuf")
        except BadRequest as exc:
            self._stats.refused("grpc_invalid_argument")
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, exc.message)
        except TooLarge as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
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
        service = _TraceService(handle, security, stats)
        # Registered by hand rather than through the generated servicer so that the
        # method receives the request's bytes, not a message gRPC already parsed.
        self._server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            _SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(
                service.Export, request_deserializer=None,
                response_serializer=ExportTraceServiceResponse.SerializeToString)}),))
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
