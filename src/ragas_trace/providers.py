"""The OpenTelemetry plumbing ``setup()`` needs: span exporters by name, a metrics
pipeline (Prometheus scrape endpoint or OTLP), and whether an app already has
SDK providers to join. Exporter packages are imported only when used, with an
error naming the extra to install."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import metrics as metrics_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SpanExporter

logger = logging.getLogger("ragas_trace")

_OTLP_EXTRA = "pip install 'ragas-trace[otlp]'"


def otlp_configured(signal: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``OTEL_EXPORTER_OTLP_ENDPOINT`` or its per-signal twin is set."""
    environ = os.environ if env is None else env
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT"))


def _otlp_protocol(signal: str) -> str:
    return (os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
            or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()


def span_exporter(choice: str) -> SpanExporter | None:
    """The exporter an ``exporter`` setting names (``auto`` is resolved by the caller)."""
    if choice == "console":
        return ConsoleSpanExporter()
    if choice != "otlp":
        return None
    try:
        if _otlp_protocol("traces") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
            return GrpcSpanExporter()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        return OTLPSpanExporter()
    except ImportError as exc:
        raise ImportError(f"the OTLP exporter needs the otlp extra: {_OTLP_EXTRA}") from exc


def existing_tracer_provider() -> TracerProvider | None:
    """The global provider if the app (or ``opentelemetry-instrument``) set an SDK one."""
    provider = trace_api.get_tracer_provider()
    return provider if isinstance(provider, TracerProvider) else None


def existing_meter_provider() -> MeterProvider | None:
    provider = metrics_api.get_meter_provider()
    return provider if isinstance(provider, MeterProvider) else None


class PrometheusEndpoint:
    """A scrape endpoint serving a private registry fed by its own MeterProvider."""

    def __init__(self, port: int, host: str, resource: Resource) -> None:
        try:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError as exc:
            raise ImportError(f"metrics_port needs the otlp extra: {_OTLP_EXTRA}") from exc
        registry = CollectorRegistry()
        reader = PrometheusMetricReader(registry=registry)
        self.meter_provider = MeterProvider(metric_readers=[reader], resource=resource)
        server, _thread = start_http_server(port, addr=host, registry=registry)
        self._server: Any = server
        self.port: int = server.server_port
        self.host: str = str(server.server_address[0])

    def close(self, timeout_millis: float) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.meter_provider.shutdown(timeout_millis=timeout_millis)


def otlp_meter_provider(resource: Resource) -> MeterProvider:
    """A MeterProvider exporting periodically over OTLP (protocol from the environment)."""
    from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader

    exporter: MetricExporter
    try:
        if _otlp_protocol("metrics") == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                OTLPMetricExporter as GrpcMetricExporter,
            )
            exporter = GrpcMetricExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            exporter = OTLPMetricExporter()
    except ImportError as exc:
        raise ImportError(f"OTLP metrics need the otlp extra: {_OTLP_EXTRA}") from exc
    return MeterProvider(metric_readers=[PeriodicExportingMetricReader(exporter)],
                         resource=resource)
