"""``ragas_trace.setup()``: the front door for scoring in production.

It joins what the app already has. If an SDK ``TracerProvider`` is set globally
(by ``opentelemetry-instrument``, say) or passed in, the scoring processor is
added to it; that provider's own processors keep exporting every span, so unless
an exporter is named explicitly, ragas-trace forwards nothing and the scores
travel on evaluation spans (linked to the evaluated span) and metrics. Otherwise
it creates a provider, sets it as the global one, and exports through
``exporter`` (default: OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, else
nothing but metrics); with ``project_from_service`` that provider's spans go to the
Phoenix project named after the service; to Langfuse's OTLP endpoint it adds the
basic auth built from ``LANGFUSE_PUBLIC_KEY`` / ``LANGFUSE_SECRET_KEY`` and the
ingestion-version header. Likewise for metrics: ``metrics_port`` serves a Prometheus
endpoint (for pre-fork servers see ``ragas_trace.metrics_port``); else an existing
global SDK ``MeterProvider`` is used; else OTLP
metrics when an endpoint is configured, unless it is a traces-only backend
(Phoenix, Langfuse) and no metrics endpoint was named. The same for the
``gen_ai.evaluation.result`` log records: a ``logger_provider`` passed in, else a
global SDK one, else OTLP logs under the same rule (``evaluation_logs`` turns them
on or off whatever is configured)."""

from __future__ import annotations

import logging
import os
import time
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as trace_api
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.util.re import parse_env_headers

from ragas_trace import _app_names, exit_flush, providers
from ragas_trace import semconv as sc
from ragas_trace._deadline import call_within, remaining
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.config import Settings
from ragas_trace.exporters import multiprocess_metrics
from ragas_trace.exporters.annotations.langfuse import is_langfuse_otlp, otlp_headers
from ragas_trace.exporters.annotations.phoenix import base_url as phoenix_base_url
from ragas_trace.exporters.app_label import UNKNOWN_APP
from ragas_trace.exporters.content_policy import Redactor
from ragas_trace.exporters.multiprocess_metrics import MultiprocessMeterProvider
from ragas_trace.judges.base import Judge
from ragas_trace.metrics_port import MetricsEndpoint, open_metrics_port
from ragas_trace.pipeline import ScoringPipeline, build_pipeline, recover_in_background
from ragas_trace.scorer.sampler import AlwaysRule

if TYPE_CHECKING:
    from ragas_trace.collectors.langchain import RagasCallbackHandler
    from ragas_trace.exporters.processor import ScoringSpanProcessor

logger = logging.getLogger("ragas_trace")


class RagasTrace:
    """What ``setup()`` built. At interpreter exit and on SIGTERM (see
    ``ragas_trace.exit_flush``) ``flush_for_exit()`` runs unless ``shutdown()`` ran first.
    ``pipeline`` is None with ``judge="off"``: the spans are exported as they are, for
    a scorer in another process (``ragas-trace serve``) to score."""

    def __init__(self, pipeline: ScoringPipeline | None, tracer_provider: TracerProvider,
                 meter_provider: MeterProvider, *, owns_tracer_provider: bool,
                 owns_meter_provider: bool,
                 prometheus: MetricsEndpoint | None,
                 logger_provider: LoggerProvider | None = None,
                 owns_logger_provider: bool = False,
                 settings: Settings | None = None) -> None:
        self.pipeline = pipeline
        self._settings = settings if settings is not None or pipeline is None \
            else pipeline.settings
        self.logger_provider = logger_provider
        self._owns_logger_provider = owns_logger_provider
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self._owns_tracer_provider = owns_tracer_provider
        self._owns_meter_provider = owns_meter_provider
        self._prometheus = prometheus
        self._shut_down = False
        self._exit_by: float | None = None  # the exit path's one deadline, once begun

    @property
    def processor(self) -> ScoringSpanProcessor:
        if self.pipeline is None:
            raise RuntimeError("ragas-trace: judge='off', this process does not score")
        return self.pipeline.processor

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            raise RuntimeError("ragas-trace: built without settings")
        return self._settings

    @property
    def metrics_port(self) -> int | None:
        """The port of the Prometheus endpoint this process serves (useful with
        ``metrics_port=0``); None where another process serves it."""
        endpoint = self._prometheus
        return endpoint.port if endpoint is not None and endpoint.serving else None

    @property
    def metrics_host(self) -> str | None:
        """The address the Prometheus endpoint is bound to."""
        return self._prometheus.host if self._prometheus is not None else None

    def langchain_handler(self, **kwargs: Any) -> RagasCallbackHandler:
        """A ``RagasCallbackHandler`` bound to this provider (needs the langchain extra)."""
        from ragas_trace.collectors.langchain import RagasCallbackHandler

        kwargs.setdefault("tracer_provider", self.tracer_provider)
        return RagasCallbackHandler(**kwargs)

    def prime_app(self, app_name: str | None) -> None:
        """Create ``app_name``'s score series at zero (None: the ``app_name`` setting's,
        else ``unknown``), so that the rules count its first scores. ``setup()`` calls
        it, and a handler made with an ``app_name`` announces it (``_app_names``).
        Never raises."""
        if self.pipeline is None:
            return  # judge='off': the scoring process has the series
        try:
            self.pipeline.metrics.prime(app_name or self.settings.app_name or UNKNOWN_APP,
                                        self.pipeline.scorer.judge_name)
        except Exception as exc:
            record_internal_error("setup.prime_app", exc)

    def _handler_made(self, app_name: str, tracer_provider: Any) -> None:
        """A collector's handler for ``app_name``: ours if it traces to our provider
        (or to the global one, which ``setup()`` set when it made the provider)."""
        mine = tracer_provider is self.tracer_provider or (
            tracer_provider is None and self._owns_tracer_provider)
        if mine and not self._shut_down:
            self.prime_app(app_name)

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every held span is scored and exported, then flush the tracer
        provider (evaluation spans included), the evaluation log records and our own
        push metrics, all within
        ``timeout_s``. ``False`` if something was not done in time or not delivered;
        never raises."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        pipeline = self.pipeline
        ok = pipeline.processor.force_flush(int(timeout_s * 1000)) if pipeline else True
        # The provider's other processors too (on a joined provider they carry our
        # evaluation spans); the SDK's BatchSpanProcessor ignores this timeout.
        left = remaining(deadline)
        ok = call_within(lambda: self.tracer_provider.force_flush(int(left * 1000)), left,
                         "tracer provider flush") and ok
        ok = self._flush_logs(deadline) and ok
        # Only our own push (OTLP) pipeline: flushing a pull reader (Prometheus) queues
        # a second copy of every series for the next scrape.
        if self._owns_meter_provider and isinstance(self.meter_provider, SdkMeterProvider):
            meters = self.meter_provider
            left = remaining(deadline)
            ok = call_within(lambda: meters.force_flush(int(left * 1000)), left,
                             "metrics flush") and ok
        return ok

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Score or release every held span, flush, stop; one deadline (default: the
        hold timeout + 1 s). ``False`` if something was not scored in time or not
        delivered (the count is logged); never raises. Safe twice."""
        if timeout_s is None:
            timeout_s = self.settings.hold_timeout_s + 1.0
        if self._shut_down:
            return True
        self._shut_down = True
        exit_flush.forget(self)
        deadline = time.monotonic() + max(0.0, timeout_s)
        pipeline = self.pipeline
        ok = pipeline.processor.shutdown(timeout_s) if pipeline else True
        provider = self.tracer_provider
        left = remaining(deadline)
        if self._owns_tracer_provider:
            ok = call_within(provider.shutdown, left, "tracer provider shutdown") and ok
        else:  # not ours to stop, but our evaluation spans are in its processors
            ok = call_within(lambda: provider.force_flush(int(left * 1000)), left,
                             "tracer provider flush") and ok
        logs = self.logger_provider
        if self._owns_logger_provider and isinstance(logs, SdkLoggerProvider):
            ok = call_within(logs.shutdown, max(0.05, remaining(deadline)),
                             "logger provider shutdown") and ok
        else:  # not ours to stop, but our evaluation records are in its processors
            ok = self._flush_logs(deadline) and ok
        left = max(0.05, remaining(deadline))
        if self._prometheus is not None:
            endpoint = self._prometheus
            ok = call_within(lambda: endpoint.close(left * 1000), left,
                             "metrics endpoint shutdown") and ok
        elif self._owns_meter_provider and isinstance(self.meter_provider, SdkMeterProvider):
            meters = self.meter_provider
            ok = call_within(lambda: meters.shutdown(timeout_millis=left * 1000), left,
                             "metrics shutdown") and ok
        return ok

    def _flush_logs(self, deadline: float) -> bool:
        logs = self.logger_provider
        if not isinstance(logs, SdkLoggerProvider):
            return True
        left = remaining(deadline)
        return call_within(lambda: logs.force_flush(int(left * 1000)), left,
                           "logger provider flush")

    def flush_for_exit(self) -> bool:
        """What the interpreter exit and SIGTERM paths do, within one deadline
        (``exit_grace_s`` from the first call): the judge gets up to
        ``exit_flush.JUDGE_SHARE`` of it for the held spans, then a shutdown the rest
        (what it cannot deliver goes to the spool, else leaves as ``dropped`` /
        ``shutdown``)."""
        self.stop_scoring()
        return self.export_at_exit()

    def stop_scoring(self) -> bool:
        """The first half of ``flush_for_exit``: give the judge its share, then stop it."""
        if self.pipeline is None:
            return True
        judge_until = self._exit_deadline() - (
            (1.0 - exit_flush.JUDGE_SHARE) * self.settings.exit_grace_s)
        return self.pipeline.processor.stop_scoring(remaining(judge_until))

    def export_at_exit(self) -> bool:
        """The second half of ``flush_for_exit``: a shutdown until the exit deadline."""
        return self.shutdown(remaining(self._exit_deadline()))

    def _exit_deadline(self) -> float:
        if self._exit_by is None:
            self._exit_by = time.monotonic() + self.settings.exit_grace_s
        return self._exit_by


def setup(
    service_name: str | None = None,
    exporter: SpanExporter | SpanProcessor | str | None = None,
    judge: Judge | str | None = None,
    sample_rate: float | None = None,
    hold_timeout_s: float | None = None,
    metrics_port: int | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    logger_provider: LoggerProvider | None = None,
    redact: Redactor | None = None,
    always_score: AlwaysRule | None = None,
    **settings: Any,
) -> RagasTrace:
    """Start scoring RAG traces. Every keyword has an environment twin (see
    ``ragas_trace.config.SETTINGS`` or docs/reference/settings.md); a keyword wins over it.

    ``exporter``: a ``SpanExporter`` / ``SpanProcessor``, or ``auto`` | ``otlp`` |
    ``console`` | ``none``. ``judge``: ``local`` | ``openai`` | a judge object, or
    ``off``: nothing is scored here, the spans are exported unchanged (OTLP to a
    ``ragas-trace serve`` sidecar that scores them), no judge is loaded.
    ``logger_provider``: where the ``gen_ai.evaluation.result`` log records go.
    ``redact``: a ``str -> str`` function applied to exported content.
    ``always_score``: a predicate on the finished RAG span that forces scoring.
    Raises ``ValueError`` naming a bad argument.
    """
    exporter_object = exporter if isinstance(exporter, SpanExporter | SpanProcessor) else None
    if exporter is not None and exporter_object is None and not isinstance(exporter, str):
        raise ValueError(f"ragas-trace setting 'exporter': expected a SpanExporter, "
                         f"a SpanProcessor or a name, got {exporter!r}")
    if tracer_provider is not None and not isinstance(tracer_provider, TracerProvider):
        raise ValueError("ragas-trace setting 'tracer_provider': expected an SDK TracerProvider")
    resolved = Settings.load(
        service_name=service_name,
        exporter=exporter if isinstance(exporter, str) else None,
        judge=judge if isinstance(judge, str) else None,
        sample_rate=sample_rate, hold_timeout_s=hold_timeout_s, metrics_port=metrics_port,
        **settings)
    judge_object = None if isinstance(judge, str) else judge
    if resolved.judge == "off" and judge_object is None:
        return _export_only(resolved, exporter_object, tracer_provider)

    joined = tracer_provider or providers.existing_tracer_provider()
    provider = joined or TracerProvider(resource=service_resource(resolved.service_name,
                                                           resolved.project_from_service))
    service = resolved.service_name or str(
        provider.resource.attributes.get(SERVICE_NAME, "unknown_service"))

    downstream = choose_downstream(resolved, exporter_object, joined=joined is not None)
    if "phoenix" in resolved.annotations \
            and sc.OPENINFERENCE_PROJECT_NAME not in provider.resource.attributes:
        logger.info("ragas-trace: Phoenix annotations on; the traces carry no "
                    "openinference.project.name, so Phoenix files them under its 'default' "
                    "project (set project_from_service=True / "
                    "RAGAS_TRACE_PROJECT_FROM_SERVICE=true for a project named %r)", service)
    if downstream is None and joined is None:
        logger.info("ragas-trace: no span exporter configured (set "
                    "OTEL_EXPORTER_OTLP_ENDPOINT or pass exporter=); scores go to metrics")

    prometheus = None
    owns_meter_provider = False
    if meter_provider is None and resolved.metrics_port is not None:
        meter_provider, prometheus = open_metrics_port(
            resolved.metrics_port, resolved.metrics_host, provider.resource)
    elif meter_provider is None:
        meter_provider = providers.existing_meter_provider()
        if meter_provider is None and otlp_metrics_wanted(resolved):
            meter_provider = providers.otlp_meter_provider(provider.resource)
            owns_meter_provider = True
    meter_provider = meter_provider or NoOpMeterProvider()
    logger_provider, owns_logger_provider = choose_logger_provider(
        resolved, logger_provider, provider.resource)

    try:
        pipeline = build_pipeline(
            resolved, downstream, judge=judge_object, meter_provider=meter_provider,
            redact=redact, always=always_score, service=service,
            evaluation_tracer=provider.get_tracer("ragas_trace") if downstream is None
            else None, logger_provider=logger_provider)
    except ValueError:
        if owns_logger_provider and isinstance(logger_provider, SdkLoggerProvider):
            logger_provider.shutdown()
        raise
    if any(not other._shut_down and other.tracer_provider is provider for other in _live):
        logger.warning("ragas-trace: setup() called again on the same TracerProvider; "
                       "each call adds a scoring processor (shut the first one down)")
    provider.add_span_processor(pipeline.processor)
    if joined is None:
        trace_api.set_tracer_provider(provider)
    rt = RagasTrace(pipeline, provider, meter_provider, owns_tracer_provider=joined is None,
                    owns_meter_provider=owns_meter_provider, prometheus=prometheus,
                    logger_provider=logger_provider,
                    owns_logger_provider=owns_logger_provider)
    rt.prime_app(None)
    _app_names.listen(rt._handler_made)
    exit_flush.watch(rt, handle_sigterm=resolved.handle_sigterm)
    _live.add(rt)
    recover_in_background(pipeline.processor,
                          multiprocess_metrics.multiproc_dir()
                          if isinstance(meter_provider, MultiprocessMeterProvider) else None)
    return rt


def _export_only(resolved: Settings, exporter: SpanExporter | SpanProcessor | None,
                 tracer_provider: TracerProvider | None) -> RagasTrace:
    """``judge="off"``: the provider exports every span as it is (no hold, no judge,
    no scorer thread, no metrics: the scoring process has them)."""
    joined = tracer_provider or providers.existing_tracer_provider()
    provider = joined or TracerProvider(resource=service_resource(resolved.service_name,
                                                           resolved.project_from_service))
    downstream = choose_downstream(resolved, exporter, joined=joined is not None)
    if isinstance(downstream, SpanExporter):
        downstream = BatchSpanProcessor(downstream)
    if downstream is not None:
        provider.add_span_processor(downstream)
    elif joined is None:
        logger.warning("ragas-trace: judge='off' and no span exporter configured: spans go "
                       "nowhere (set OTEL_EXPORTER_OTLP_ENDPOINT to the scoring sidecar)")
    if resolved.metrics_port is not None:
        logger.warning("ragas-trace: judge='off': no metrics are served here (metrics_port "
                       "%s ignored); the scoring sidecar serves them", resolved.metrics_port)
    if joined is None:
        trace_api.set_tracer_provider(provider)
    rt = RagasTrace(None, provider, NoOpMeterProvider(), owns_tracer_provider=joined is None,
                    owns_meter_provider=False, prometheus=None, settings=resolved)
    exit_flush.watch(rt, handle_sigterm=resolved.handle_sigterm)  # the spans still queued
    _live.add(rt)
    return rt


def choose_downstream(settings: Settings, exporter: SpanExporter | SpanProcessor | None,
                      joined: bool) -> SpanExporter | SpanProcessor | None:
    """Where ragas-trace sends spans. An exporter object or an explicit name wins;
    ``auto`` on a provider that already exports is nothing (its processors export
    every span; scores ride on evaluation spans), else OTLP when configured."""
    if exporter is not None:
        return exporter
    choice = settings.exporter
    if choice == "auto":
        choice = "otlp" if not joined and providers.otlp_configured("traces") else "none"
    traces_url = providers.otlp_endpoint("traces") or ""
    if choice == "otlp" and is_langfuse_otlp(traces_url):
        return providers.otlp_span_exporter(headers=otlp_headers(
            settings.langfuse_public_key, settings.langfuse_secret_key, _env_headers()))
    return providers.span_exporter(choice)


def _env_headers(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_TRACES_HEADERS``, else ``..._HEADERS``, as the SDK reads them."""
    environ = os.environ if env is None else env
    raw = (environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
           or environ.get("OTEL_EXPORTER_OTLP_HEADERS") or "")
    return dict(parse_env_headers(raw, liberal=True))


def traces_only_backend(settings: Settings, endpoint: str | None = None,
                        env: Mapping[str, str] | None = None) -> bool:
    """Whether the OTLP endpoint (``endpoint``, else the environment's) is one that
    takes traces only: Langfuse's (``/api/public/otel``), or Phoenix's (its REST base,
    or annotations going to Phoenix or Langfuse, which means that is where the
    traces go). Phoenix answers OTLP metrics with 405 / UNIMPLEMENTED."""
    if settings.annotations:
        return True
    url = providers.otlp_endpoint("traces", endpoint, env=env) or ""
    if is_langfuse_otlp(url):
        return True
    phoenix = phoenix_base_url(settings.phoenix_endpoint)
    return bool(url) and phoenix_base_url(providers.signal_url(url, "traces")) == phoenix


def otlp_metrics_wanted(settings: Settings, endpoint: str | None = None,
                        env: Mapping[str, str] | None = None) -> bool:
    """OTLP metrics when an endpoint is configured (or ``endpoint`` given), except to
    a traces-only backend unless asked for by name
    (``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``)."""
    return _otlp_signal_wanted(settings, "metrics", endpoint, env,
                               "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or metrics_port")


def otlp_logs_wanted(settings: Settings, endpoint: str | None = None,
                     env: Mapping[str, str] | None = None) -> bool:
    """OTLP evaluation log records under the same rule as metrics, unless
    ``OTEL_LOGS_EXPORTER`` says ``none``."""
    environ = os.environ if env is None else env
    if environ.get("OTEL_LOGS_EXPORTER", "").strip().lower() == "none":
        return False
    return _otlp_signal_wanted(settings, "logs", endpoint, environ,
                               "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")


def _otlp_signal_wanted(settings: Settings, signal: str, endpoint: str | None,
                        env: Mapping[str, str] | None, ask: str) -> bool:
    environ = os.environ if env is None else env
    if environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip():
        return True
    if not (endpoint or providers.otlp_configured(signal, environ)):
        return False
    if traces_only_backend(settings, endpoint, environ):
        logger.info("ragas-trace: the OTLP endpoint takes traces only (Phoenix / Langfuse): "
                    "no OTLP %s (set %s for them)", signal, ask)
        return False
    return True


def choose_logger_provider(settings: Settings, given: LoggerProvider | None,
                           resource: Resource) -> tuple[LoggerProvider | None, bool]:
    """Where the evaluation log records go, and whether we own (and stop) it: none
    when ``evaluation_logs`` is false; else ``given``, else a global SDK provider, else
    OTLP when ``evaluation_logs`` is true or an OTLP logs endpoint is wanted."""
    if settings.evaluation_logs is False:
        return None, False
    chosen = given or providers.existing_logger_provider()
    if chosen is not None:
        return chosen, False
    if settings.evaluation_logs or otlp_logs_wanted(settings):
        return providers.otlp_logger_provider(resource), True
    return None, False


_live: weakref.WeakSet[RagasTrace] = weakref.WeakSet()


def service_resource(service_name: str | None, project_from_service: bool = False) -> Resource:
    """``service.name`` given wins over ``OTEL_SERVICE_NAME``; the Phoenix project is
    added only where neither code nor ``OTEL_RESOURCE_ATTRIBUTES`` chose one."""
    resource = Resource.create({SERVICE_NAME: service_name} if service_name else {})
    if project_from_service and sc.OPENINFERENCE_PROJECT_NAME not in resource.attributes:
        service = resource.attributes.get(SERVICE_NAME)
        resource = resource.merge(Resource({sc.OPENINFERENCE_PROJECT_NAME: str(service)}))
    return resource
