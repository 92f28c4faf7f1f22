"""The gateway assembled: receivers -> ingest -> trace assembler -> (scoring
processor) -> forward queue -> next OTLP hop, plus the timer that releases ready
traces and an orderly stop that loses nothing already accepted."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter

from ragas_trace.config import Settings
from ragas_trace.gateway.assembler import TraceAssembler
from ragas_trace.gateway.convert import Limits
from ragas_trace.gateway.downstream import make_exporter
from ragas_trace.gateway.forward import ForwardQueue
from ragas_trace.gateway.grpc_receiver import OtlpGrpcServer
from ragas_trace.gateway.http_receiver import OtlpHttpServer
from ragas_trace.gateway.ingest import Ingest
from ragas_trace.gateway.scoring import ScoringSink
from ragas_trace.gateway.security import Security, is_loopback
from ragas_trace.gateway.settings import GatewaySettings
from ragas_trace.gateway.stats import GatewayStats
from ragas_trace.judges.base import Judge
from ragas_trace.providers import PrometheusEndpoint

logger = logging.getLogger(__name__)


class Gateway:
    """``start()`` binds and serves; ``stop(timeout_s)`` drains within the deadline.

    ``exporter`` replaces the OTLP exporter built from the settings and ``judge`` the
    one named there (tests and benchmarks pass their own).
    """

    def __init__(self, settings: GatewaySettings, *, exporter: SpanExporter | None = None,
                 judge: Judge | None = None) -> None:
        self.settings = settings
        # First: a refusal to start must not leave threads or ports behind.
        security = Security(settings.token(), settings.tls_cert, settings.tls_key)
        self._exposed = _exposed_without_token(settings, security)
        self.stats = GatewayStats()
        if exporter is None:
            if not settings.forward_endpoint:
                raise ValueError("forward_endpoint is required (--forward-endpoint)")
            exporter = make_exporter(
                settings.forward_protocol,  # type: ignore[arg-type]
                settings.forward_endpoint, headers=settings.forward_headers,
                timeout_s=settings.forward_timeout_s, gzip=settings.forward_gzip,
                ca_file=settings.forward_ca_file)
        self.forward = ForwardQueue(exporter, self.stats, max_spans=settings.queue_spans,
                                    max_batch_bytes=settings.forward_max_batch_bytes,
                                    max_bytes=settings.queue_bytes,
                                    retry_for_s=settings.retry_for_s)
        self.metrics: PrometheusEndpoint | None = None
        if settings.metrics_port is not None:
            self.metrics = PrometheusEndpoint(
                settings.metrics_port, settings.metrics_host,
                Resource.create({"service.name": settings.service_name}))
        # Without scoring nothing needs holding: spans go straight to the queue.
        self.sink: ScoringSink | None = None
        self.assembler: TraceAssembler | None = None
        deliver: Callable[[Sequence[ReadableSpan]], None] = self.forward.offer
        if settings.judge != "off" or judge is not None:
            self.sink = ScoringSink(settings, self.forward, self.stats, judge=judge,
                                    meter_provider=self.metrics.meter_provider if self.metrics
                                    else None)
            self.assembler = TraceAssembler(self.sink, quiet_s=settings.quiet_s,
                                            max_wait_s=settings.max_wait_s,
                                            max_spans=settings.max_trace_spans,
                                            max_bytes=settings.max_trace_bytes)
            deliver = self.assembler.add
            self.stats.add_gauge("held_traces", self.assembler.held_traces)
            self.stats.add_gauge("held_spans", self.assembler.held_spans)
        elif Settings.load().content != "keep":
            logger.warning("--judge off forwards spans as received: the content policy "
                           "(RAGAS_TRACE_CONTENT) applies only when scoring")
        self.stats.add_gauge("forward_queue_spans", self.forward.pending)
        if self.metrics is not None:
            self.stats.register_metrics(
                self.metrics.meter_provider.get_meter("ragas_trace.gateway"))
        limits = Limits(max_attributes=settings.max_attributes, max_events=settings.max_events,
                        max_links=settings.max_links)
        ingest = Ingest(deliver, self.forward, self.stats, limits,
                        whole_requests=self.assembler is None)
        self.grpc: OtlpGrpcServer | None = None
        self.http: OtlpHttpServer | None = None
        if settings.otlp_grpc:
            self.grpc = OtlpGrpcServer(settings.otlp_grpc, ingest, stats=self.stats,
                                       security=security,
                                       max_request_bytes=settings.max_request_bytes,
                                       max_concurrent_rpcs=settings.max_connections)
        if settings.otlp_http:
            host, _, port = settings.otlp_http.rpartition(":")
            self.http = OtlpHttpServer((host.strip("[]"), int(port)), ingest, stats=self.stats,
                                       security=security,
                                       max_request_bytes=settings.max_request_bytes,
                                       max_connections=settings.max_connections,
                                       max_open_connections=settings.max_http_connections,
                                       request_timeout_s=settings.request_timeout_s,
                                       health=self.health)
        if self.grpc is None and self.http is None:
            raise ValueError("both receivers are off: enable --otlp-grpc or --otlp-http")
        self._stopping = threading.Event()
        self._ticker = threading.Thread(target=self._tick_loop, name="ragas-gateway-tick",
                                        daemon=True)
        self._started = time.monotonic()

    def start(self) -> Gateway:
        if self.grpc is not None:
            self.grpc.start()
        if self.http is not None:
            self.http.start()
        if self.assembler is not None:
            self._ticker.start()
        if self._exposed:
            logger.warning("accepting exports without a bearer token on %s "
                           "(--allow-unauthenticated): anyone who can reach it can send "
                           "spans", ", ".join(self._exposed))
        logger.info("ragas-trace gateway listening", extra={
            "otlp_grpc": self.grpc.endpoint if self.grpc else None,
            "otlp_http": self.http.endpoint if self.http else None,
            "forward": self.settings.forward_endpoint,
            "forward_protocol": self.settings.forward_protocol,
            "judge": self.settings.judge, "auth": self.settings.token() is not None,
            "tls": self.settings.tls_cert is not None})
        return self

    def health(self) -> dict[str, Any]:
        snap = self.stats.snapshot()
        snap["status"] = "stopping" if self._stopping.is_set() else "ok"
        snap["uptime_s"] = round(time.monotonic() - self._started, 1)
        if self.sink is not None:
            snap["scoring"] = self.sink.health()
        return snap

    def _tick_loop(self) -> None:
        period = min(0.25, self.settings.quiet_s / 4)
        while self.assembler is not None and not self._stopping.wait(period):
            self.assembler.tick()

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop receiving, release every held root, score what can be scored and
        forward everything within ``timeout_s``. Returns whether all of it made it."""
        deadline = time.monotonic() + timeout_s
        if self._stopping.is_set():
            return True
        self._stopping.set()
        if self.http is not None:
            self.http.stop()
        if self.grpc is not None:
            self.grpc.stop(grace_s=min(2.0, timeout_s / 4))
        if self._ticker.is_alive():
            self._ticker.join(timeout=1.0)
        sink_ok = True
        if self.assembler is not None and self.sink is not None:
            self.assembler.close()
            sink_ok = self.sink.close(max(0.1, (deadline - time.monotonic()) * 0.6))
        forward_ok = self.forward.close(max(0.1, deadline - time.monotonic()))
        if self.metrics is not None:
            self.metrics.close(max(0.0, deadline - time.monotonic()) * 1000)
        logger.info("ragas-trace gateway stopped", extra={"stats": self.stats.snapshot()})
        return sink_ok and forward_ok

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _exposed_without_token(settings: GatewaySettings, security: Security) -> list[str]:
    """The receiver addresses reachable from other machines when there is no token
    (empty with a token). Raises ``ValueError`` unless ``allow_unauthenticated``."""
    if security.token is not None:
        return []
    exposed = [address for address in (settings.otlp_grpc, settings.otlp_http)
               if address and not is_loopback(address.rpartition(":")[0])]
    if exposed and not settings.allow_unauthenticated:
        raise ValueError(
            f"refusing to listen on {', '.join(exposed)} without a bearer token: anyone "
            "who can reach it could send spans. Set --token-file or RAGAS_GATEWAY_TOKEN, "
            "or pass --allow-unauthenticated (RAGAS_GATEWAY_ALLOW_UNAUTHENTICATED=true) "
            "to accept unauthenticated exports")
    return exposed
