"""The OpenTelemetry plumbing ``setup()`` needs: span exporters by name, a metrics
pipeline (Prometheus scrape endpoint or OTLP), a logs pipeline (OTLP) for the
evaluation events, and whether an app already has SDK providers to join.
Exporter packages are imported only when used, with an error naming the extra to
install.

OTLP endpoints follow the exporter specification: a signal-specific endpoint
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._METRICS_ENDPOINT``, ``..._LOGS_ENDPOINT``)
is used as it is, a base one (``OTEL_EXPORTER_OTLP_ENDPOINT``, an ``endpoint``
argument) gets ``/v1/traces``, ``/v1/metrics`` or ``/v1/logs`` appended for OTLP/HTTP.
A base URL that already ends in a signal path (``http://127.0.0.1:6006/v1/traces``,
as backends print them) is taken as that signal's URL, and its base for the
others."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import _logs as logs_api
from opentelemetry import metrics as metrics_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

from ragas_trace import _thread_signals

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter

logger = logging.getLogger("ragas_trace")

_OTLP_EXTRA = "pip install 'ragas-trace[otlp]'"
_SIGNAL_PATHS = {"traces": "/v1/traces", "metrics": "/v1/metrics", "logs": "/v1/logs"}


def otlp_configured(signal: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``OTEL_EXPORTER_OTLP_ENDPOINT`` or its per-signal twin is set."""
    environ = os.environ if env is None else env
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"))


def _otlp_protocol(signal: str, env: Mapping[str, str] | None = None) -> str:
    environ = os.environ if env is None else env
    return (environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
            or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()


def signal_url(endpoint: str, signal: str) -> str:
    """The OTLP/HTTP URL of ``signal`` from a base endpoint (path appended) or from a
    URL that already ends in a signal path (kept for that signal, swapped for the
    other)."""
    url = endpoint.strip().rstrip("/")
    own = _SIGNAL_PATHS[signal]
    if url.endswith(own):
        return url
    for path in _SIGNAL_PATHS.values():
        if url.endswith(path):
            return url[:-len(path)] + own
    return url + own


def otlp_endpoint(signal: str, endpoint: str | None = None,
                  env: Mapping[str, str] | None = None) -> str | None:
    """Where ``signal`` is exported: ``endpoint`` (a base or signal URL, e.g. a CLI
    flag), else the signal-specific variable as it is, else the base variable. For
    OTLP/HTTP the full signal URL; for gRPC the endpoint as given (it has no path).
    None when nothing is configured (the exporter's default then applies)."""
    environ = os.environ if env is None else env
    grpc = _otlp_protocol(signal, environ) == "grpc"
    if endpoint and endpoint.strip():
        return endpoint.strip() if grpc else signal_url(endpoint, signal)
    specific = environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    if specific:
        return specific
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if base:
        return base if grpc else signal_url(base, signal)
    return None


def span_exporter(choice: str) -> SpanExporter | None:
    """The exporter an ``exporter`` setting names (``auto`` is resolved by the caller)."""
    if choice == "console":
        return ConsoleSpanExporter()
    if choice != "otlp":
        return None
    return otlp_span_exporter()


def otlp_span_exporter(endpoint: str | None = None,
                       headers: Mapping[str, str] | None = None) -> SpanExporter:
    """An OTLP span exporter (protocol from the environment) to ``otlp_endpoint``;
    ``headers``, when given, replace ``OTEL_EXPORTER_OTLP_*HEADERS``."""
    url = otlp_endpoint("traces", endpoint)
    given = dict(headers) if headers is not None else None
    try:
        if _otlp_protocol("traces") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
            return GrpcSpanExporter(endpoint=url,
                                    headers=tuple(given.items()) if given else None)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        return OTLPSpanExporter(endpoint=url, headers=given)
    except ImportError as exc:
        raise ImportError(f"the OTLP exporter needs the otlp extra: {_OTLP_EXTRA}") from exc


def otlp_metric_exporter(endpoint: str | None = None) -> MetricExporter:
    """An OTLP metric exporter (protocol from the environment) to ``otlp_endpoint``."""
    url = otlp_endpoint("metrics", endpoint)
    try:
        if _otlp_protocol("metrics") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcMetricExporter,
            )
            return GrpcMetricExporter(endpoint=url)
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        return OTLPMetricExporter(endpoint=url)
    except ImportError as exc:
        raise ImportError(f"OTLP metrics need the otlp extra: {_OTLP_EXTRA}") from exc


def otlp_log_exporter(endpoint: str | None = None) -> LogRecordExporter:
    """An OTLP log exporter (protocol from ``OTEL_EXPORTER_OTLP_LOGS_PROTOCOL``, else
    ``OTEL_EXPORTER_OTLP_PROTOCOL``) to ``otlp_endpoint``; headers, timeout and
    compression come from the exporter's own ``OTEL_EXPORTER_OTLP_LOGS_*`` /
    ``OTEL_EXPORTER_OTLP_*`` variables."""
    url = otlp_endpoint("logs", endpoint)
    try:
        if _otlp_protocol("logs") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                OTLPLogExporter as GrpcLogExporter,
            )
            return GrpcLogExporter(endpoint=url)
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        return OTLPLogExporter(endpoint=url)
    except ImportError as exc:
        raise ImportError(f"OTLP logs need the otlp extra: {_OTLP_EXTRA}") from exc


def otlp_logger_provider(resource: Resource, endpoint: str | None = None) -> LoggerProvider:
    """A LoggerProvider exporting in batches over OTLP (bounded queue: the SDK's batch
    processor drops, and logs that it drops, what does not fit). Its owner shuts it
    down (no exit hook of its own: the exit path flushes it after the judge)."""
    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    with _thread_signals.app_signals_blocked():  # the SDK processor's thread
        processor = BatchLogRecordProcessor(otlp_log_exporter(endpoint))
    provider.add_log_record_processor(processor)
    return provider


def existing_logger_provider() -> LoggerProvider | None:
    """The global provider if the app (or ``opentelemetry-instrument``) set an SDK one."""
    provider = logs_api.get_logger_provider()
    return provider if isinstance(provider, LoggerProvider) else None


def existing_tracer_provider() -> TracerProvider | None:
    """The global provider if the app (or ``opentelemetry-instrument``) set an SDK one."""
    provider = trace_api.get_tracer_provider()
    return provider if isinstance(provider, TracerProvider) else None


def existing_meter_provider() -> MeterProvider | None:
    provider = metrics_api.get_meter_provider()
    return provider if isinstance(provider, MeterProvider) else None


class PrometheusEndpoint:
    """A scrape endpoint serving a private registry: fed by its own MeterProvider, or
    with ``multiproc_dir``, the merge of every process's files there (see
    ``exporters.multiprocess_metrics``). Raises ``OSError`` when it cannot bind."""

    def __init__(self, port: int, host: str, resource: Resource,
                 multiproc_dir: str | None = None) -> None:
        try:
            from prometheus_client import CollectorRegistry, start_http_server

            from ragas_trace.exporters.prometheus_exemplars import ExemplarPrometheusReader
        except ImportError as exc:
            raise ImportError(f"metrics_port needs the otlp extra: {_OTLP_EXTRA}") from exc
        registry = CollectorRegistry()
        server, _thread = start_http_server(port, addr=host, registry=registry)
        self._server: Any = server
        self._pid = os.getpid()
        self.port: int = server.server_port
        self.host: str = str(server.server_address[0])
        self.meter_provider: metrics_api.MeterProvider
        if multiproc_dir is not None:
            from ragas_trace.exporters.multiprocess_metrics import (
                MultiprocessCollector,
                MultiprocessMeterProvider,
            )
            registry.register(MultiprocessCollector(multiproc_dir))  # type: ignore[arg-type]
            self.meter_provider = MultiprocessMeterProvider()
        else:
            reader = ExemplarPrometheusReader(registry)
            self.meter_provider = MeterProvider(metric_readers=[reader], resource=resource)

    @property
    def serving(self) -> bool:
        """False in a process forked from the one serving: it has the socket, not
        the thread that answers on it."""
        return os.getpid() == self._pid

    def close(self, timeout_millis: float) -> None:
        if self.serving:
            self._server.shutdown()
            self._server.server_close()
        if isinstance(self.meter_provider, MeterProvider):
            self.meter_provider.shutdown(timeout_millis=timeout_millis)


def otlp_meter_provider(resource: Resource) -> MeterProvider:
    """A MeterProvider exporting periodically over OTLP (protocol from the environment)."""
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    exporter = otlp_metric_exporter()
    with _thread_signals.app_signals_blocked():  # the SDK reader's thread
        reader = PeriodicExportingMetricReader(exporter)
    return MeterProvider(metric_readers=[reader],
                         resource=resource)
