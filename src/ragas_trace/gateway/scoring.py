"""The scoring side of the gateway: the library's own pipeline (``build_pipeline``:
judge, background scorer, sampler, content policy, metrics, ``ScoringSpanProcessor``)
fed with reassembled traces, forwarding into the gateway's queue. The
``gen_ai.evaluation.result`` log records go where ``setup()`` would send them (OTLP
logs when ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is
set, per ``RAGAS_TRACE_EVALUATION_LOGS``), not to the next hop of the spans."""

from __future__ import annotations

import logging
import time
from typing import Any

from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from ragas_trace._deadline import call_within
from ragas_trace.config import Settings
from ragas_trace.exporters.app_label import UNKNOWN_APP, AppLabel
from ragas_trace.gateway.assembler import Release
from ragas_trace.gateway.forward import ForwardQueue
from ragas_trace.gateway.settings import GatewaySettings
from ragas_trace.gateway.stats import GatewayStats
from ragas_trace.judges.base import Judge
from ragas_trace.pipeline import build_pipeline, recover_in_background
from ragas_trace.setup import choose_logger_provider

logger = logging.getLogger(__name__)


class _Borrowed(SpanProcessor):
    """The forward queue as the processor's downstream. The gateway owns the queue and
    closes it last, so the processor's shutdown must not close it."""

    def __init__(self, forward: ForwardQueue) -> None:
        self._forward = forward

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return

    def on_end(self, span: ReadableSpan) -> None:
        self._forward.on_end(span)

    def shutdown(self) -> None:
        return

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._forward.force_flush(timeout_millis)


class ScoringSink:
    """``TraceSink`` for the assembler: single spans pass through the processor (its
    content policy applies to every span), whole RAG traces are ingested at once."""

    def __init__(self, settings: GatewaySettings, forward: ForwardQueue, stats: GatewayStats,
                 *, judge: Judge | None = None, meter_provider: MeterProvider | None = None
                 ) -> None:
        library = Settings.load(
            judge=None if settings.judge == "off" else settings.judge,
            sample_rate=settings.sample_rate, service_name=settings.service_name,
            annotations=settings.annotations)
        logs, owns_logs = choose_logger_provider(
            library, None, Resource.create({"service.name": settings.service_name}))
        self._owned_logs = logs if owns_logs and isinstance(logs, LoggerProvider) else None
        try:
            self.pipeline = build_pipeline(library, _Borrowed(forward), judge=judge,
                                           meter_provider=meter_provider,
                                           service=settings.service_name,
                                           app_label=AppLabel(settings.app_names or ()),
                                           logger_provider=logs)
        except ValueError:
            if self._owned_logs is not None:
                self._owned_logs.shutdown()
            raise
        self.processor = self.pipeline.processor
        # The listed apps' series exist at zero before their first score, so that the
        # rules' increase() counts it (exporters.series_at_zero).
        for app in (*(settings.app_names or ()), UNKNOWN_APP):
            self.pipeline.metrics.prime(app, self.processor.scorer.judge_name)
        recover_in_background(self.processor, None)  # what a previous gateway spooled
        self._forward = forward
        self._stats = stats

    def pass_through(self, span: ReadableSpan) -> None:
        # The processor would forward it as it is (no RAG sign, unknown trace); with
        # content kept, skip its bookkeeping so the span is never decoded.
        if self.processor.policy.passthrough:
            self._forward.on_end(span)
        else:
            self.processor.on_end(span)

    def duplicate(self, span: ReadableSpan) -> None:
        self._stats.duplicate_root()
        self._forward.on_end(self.processor.policy.apply(span))

    def complete(self, spans: list[ReadableSpan], why: Release) -> None:
        if why in ("evicted", "shutdown"):
            logger.info("RAG trace released before it was complete", extra={
                "reason": why, "spans": len(spans)})
        self.processor.ingest(spans)

    def health(self) -> dict[str, Any]:
        return {"judge": self.pipeline.scorer.judge_name,
                "held_for_scoring": self.processor.held_count,
                "scorer_queue": self.pipeline.scorer.queued}

    def close(self, timeout_s: float) -> bool:
        """Finish scoring (within ``timeout_s``); held roots leave unscored after that.
        The evaluation log records are flushed in the last part of the time."""
        if self._owned_logs is None:
            return self.processor.shutdown(timeout_s)
        deadline = time.monotonic() + timeout_s
        scored = self.processor.shutdown(timeout_s * 0.8)
        logs = self._owned_logs
        left = max(0.05, deadline - time.monotonic())
        flushed = call_within(lambda: logs.force_flush(int(left * 1000)), left,
                              "evaluation logs flush")
        call_within(logs.shutdown, max(0.05, deadline - time.monotonic()),
                    "evaluation logs shutdown")
        return scored and flushed
