"""The gateway's Prometheus scrape endpoint: an OTel ``MeterProvider`` read by the
Prometheus exporter, served by ``prometheus_client`` (both from the ``otlp`` extra)."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource


class MetricsEndpoint:
    def __init__(self, host: str, port: int, service_name: str) -> None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server

        self.provider = MeterProvider(
            metric_readers=[PrometheusMetricReader()],
            resource=Resource.create({"service.name": service_name}))
        started: Any = start_http_server(port, addr=host)
        # prometheus_client >= 0.19 returns (server, thread); older versions None.
        self._server = started[0] if isinstance(started, tuple) else None
        self.port = self._server.server_address[1] if self._server is not None else port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.provider.shutdown()
