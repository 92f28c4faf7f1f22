"""Helpers shared by the gateway tests (conftest holds the fixtures)."""

from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ragas_trace.gateway.settings import GatewaySettings


def settings(**flags: Any) -> GatewaySettings:
    """Both receivers on free loopback ports, short reassembly times, scoring off."""
    base: dict[str, Any] = {"otlp_grpc": "127.0.0.1:0", "otlp_http": "127.0.0.1:0",
                            "quiet_s": 0.2, "max_wait_s": 3.0, "judge": "off",
                            "retry_for_s": 1.0, "log_format": "text"}
    return GatewaySettings.load({**base, **flags}, env={})


def grpc_sender(endpoint: str, **kw: Any) -> TracerProvider:
    """An app's provider exporting each span as its own request with the official
    OTLP/gRPC exporter: roots and children always arrive in different batches."""
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": "sender"}))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint, insecure=True, **kw)))
    return provider


def http_sender(endpoint: str, **kw: Any) -> TracerProvider:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    provider = TracerProvider(resource=Resource.create({"service.name": "sender"}))
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint + "/v1/traces", **kw)))
    return provider
