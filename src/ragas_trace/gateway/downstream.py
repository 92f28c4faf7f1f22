"""The downstream exporter: the official OTLP gRPC or HTTP span exporter.

For gRPC, a received request whose spans all leave unchanged is sent as the bytes
it arrived in, and ``encode_batch`` replaces the SDK's per-span re-encoding for
other received spans (``ReceivedSpan`` is read-only): their protobuf is reused as
it arrived (one C-level copy) and only spans the gateway made (scored copies of
roots, evaluation spans, content-policy copies) go through the SDK encoder.
Transport, retry and TLS stay the official exporter's.

Both exporters tell (``refused()``) when the next hop refused the last export for
good, so the forward queue drops it instead of retrying: an OTLP non-retryable
gRPC status, ``RESOURCE_EXHAUSTED`` without ``RetryInfo`` (the server's message
size limit, not a passing overload) among them; an HTTP status other than 429,
502, 503 and 504 (``413 Payload Too Large`` among them)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal

import grpc
import requests
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace.gateway.convert import ReceivedSpan, RequestSpans
from ragas_trace.providers import signal_url

Protocol = Literal["grpc", "http"]


def encode_batch(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """``encode_spans`` with received, unchanged spans copied as they arrived."""
    fresh: list[ReadableSpan] = []
    groups: dict[tuple[int, int], tuple[ResourceSpans, ScopeSpans, list[PbSpan]]] = {}
    for span in spans:
        if not isinstance(span, ReceivedSpan):
            fresh.append(span)
            continue
        rs, ss = span.origin
        key = (id(rs), id(ss))
        group = groups.get(key)
        if group is None:
            groups[key] = group = (rs, ss, [])
        group[2].append(span.pb)
    request = encode_spans(fresh) if fresh else ExportTraceServiceRequest()
    for rs, ss, pbs in groups.values():
        out_rs = request.resource_spans.add()
        out_rs.resource.CopyFrom(rs.resource)
        out_rs.schema_url = rs.schema_url
        out_ss = out_rs.scope_spans.add()
        out_ss.scope.CopyFrom(ss.scope)
        out_ss.schema_url = ss.schema_url
        out_ss.spans.extend(pbs)
    return request


def make_exporter(protocol: Protocol, endpoint: str, *, headers: dict[str, str] | None = None,
                  timeout_s: float = 10.0, gzip: bool = False,
                  ca_file: str | None = None) -> SpanExporter:
    """An OTLP span exporter to ``endpoint``: ``host:port`` or ``http(s)://host:port``
    for gRPC; for HTTP a base URL (``/v1/traces`` appended) or the traces URL itself
    (``providers.signal_url``)."""
    if protocol == "grpc":
        return _grpc_exporter(endpoint, headers, timeout_s, gzip, ca_file)
    if protocol == "http":
        return _http_exporter(signal_url(endpoint, "traces"), headers, timeout_s, gzip,
                              ca_file)
    raise ValueError(f"forward protocol must be 'grpc' or 'http', got {protocol!r}")


class _StatusSession(requests.Session):
    """Remembers, per thread, the HTTP status of its last response."""

    def __init__(self) -> None:
        super().__init__()
        self._last = threading.local()

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self._last.status = None
        response = super().request(*args, **kwargs)
        self._last.status = response.status_code
        return response

    def last_status(self) -> int | None:
        return getattr(self._last, "status", None)


# OTLP/HTTP: the statuses a client may retry; any other error status is final.
_HTTP_RETRYABLE = frozenset({429, 502, 503, 504})


def _http_exporter(url: str, headers: dict[str, str] | None, timeout_s: float, gzip: bool,
                   ca_file: str | None) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http import Compression as HttpCompression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    class RefusalAwareHttpExporter(HttpExporter):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            self._session = _StatusSession()
            super().__init__(session=self._session, **kwargs)

        def refused(self) -> str | None:
            """Why the next hop refused this thread's last export for good, or None."""
            status = self._session.last_status()
            if status is None or status < 400 or status in _HTTP_RETRYABLE:
                return None
            return f"HTTP {status}"

    exporter: SpanExporter = RefusalAwareHttpExporter(
        endpoint=url, headers=headers, timeout=timeout_s, certificate_file=ca_file,
        compression=HttpCompression.Gzip if gzip else HttpCompression.NoCompression)
    return exporter


def _grpc_exporter(endpoint: str, headers: dict[str, str] | None, timeout_s: float,
                   gzip: bool, ca_file: str | None) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    class FastGrpcExporter(OTLPSpanExporter):  # type: ignore[misc]
        # The exporter's stub is swapped for one that also sends bytes as they are,
        # here and (in SDK versions that have it) wherever the channel is rebuilt.
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._client = _RawTraceStub(self._channel)  # type: ignore[assignment]

        def _initialize_channel_and_stub(self) -> None:
            super()._initialize_channel_and_stub()  # type: ignore[no-untyped-call]
            self._client = _RawTraceStub(self._channel)  # type: ignore[assignment]

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            try:
                result: SpanExportResult = super().export(spans)
            except ValueError as exc:
                # After UNAVAILABLE the SDK closes and rebuilds the channel, which
                # another forward worker may be using: a transient failure.
                if not _closed_channel(exc):
                    raise
                return SpanExportResult.FAILURE
            return result

        def refused(self) -> str | None:
            """Why the next hop refused this thread's last export for good (an OTLP
            non-retryable gRPC status), or None: retrying it cannot help."""
            client = self._client
            return client.refused() if isinstance(client, _RawTraceStub) else None

        def _translate_data(  # type: ignore[override]  # bytes: see _RawTraceStub
                self, data: Sequence[ReadableSpan]) -> ExportTraceServiceRequest | bytes:
            if isinstance(data, RequestSpans):
                if data.raw is not None and isinstance(self._client, _RawTraceStub):
                    return data.raw
                return data.request
            return encode_batch(data)

    credentials = None
    if ca_file:
        with open(ca_file, "rb") as f:
            credentials = grpc.ssl_channel_credentials(f.read())
    insecure = not endpoint.startswith("https://") and credentials is None
    exporter: SpanExporter = FastGrpcExporter(
        endpoint=endpoint, insecure=insecure, credentials=credentials,
        headers=headers, timeout=timeout_s, retryable_error_codes=_SDK_RETRYABLE,
        compression=grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression)
    return exporter


def _closed_channel(exc: ValueError) -> bool:
    """Whether gRPC refused a call because its channel was closed: before the call
    ("... on closed channel!") or while it was being set up ("...: Channel closed!")."""
    text = str(exc).lower()
    return text.startswith("cannot invoke rpc") and "closed" in text


class _RawTraceStub:
    """``TraceServiceStub`` whose ``Export`` also takes a request already serialized,
    and remembers (per thread) the status of an export the server refused for good."""

    def __init__(self, channel: Any) -> None:
        self._export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=_serialize,
            response_deserializer=ExportTraceServiceResponse.FromString)
        self._last = threading.local()

    def Export(self, request: ExportTraceServiceRequest | bytes, **kwargs: Any) -> Any:
        self._last.refused = None
        try:
            return self._export(request, **kwargs)
        except grpc.RpcError as err:
            code = err.code()
            if code not in _RETRYABLE or (code is grpc.StatusCode.RESOURCE_EXHAUSTED
                                          and not _has_retry_info(err)):
                self._last.refused = f"{code.name}: {err.details()}"
            raise

    def refused(self) -> str | None:
        return getattr(self._last, "refused", None)


# OTLP/gRPC: the codes a client may retry; any other refusal is final.
_RETRYABLE = frozenset({
    grpc.StatusCode.CANCELLED, grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED, grpc.StatusCode.OUT_OF_RANGE, grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DATA_LOSS, grpc.StatusCode.RESOURCE_EXHAUSTED})
# The SDK exporter's own quick retries: never RESOURCE_EXHAUSTED, which the stub above
# decides on (and the forward queue retries when the server gave a RetryInfo).
_SDK_RETRYABLE = _RETRYABLE - {grpc.StatusCode.RESOURCE_EXHAUSTED}


def _has_retry_info(err: Any) -> bool:
    """OTLP: RESOURCE_EXHAUSTED is retryable only when the server sends a RetryInfo."""
    trailing = err.trailing_metadata() if callable(getattr(err, "trailing_metadata", None)) \
        else None
    return any(key == "google.rpc.retryinfo-bin" for key, _ in trailing or ())


def _serialize(request: ExportTraceServiceRequest | bytes) -> bytes:
    if isinstance(request, bytes):
        return request
    data: bytes = request.SerializeToString()
    return data
