"""Build the scoring pipeline (judge, scorer, sampler, metrics, processor) from
``Settings``: one factory shared by ``setup()`` and the ``serve`` gateway."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider, NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import Tracer

from ragas_trace import _thread_signals
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.config import Settings
from ragas_trace.exporters.annotations import AnnotationSinks, backends
from ragas_trace.exporters.app_label import AppLabel
from ragas_trace.exporters.content_policy import ContentPolicy, Redactor
from ragas_trace.exporters.evaluation_logs import EvaluationLogs
from ragas_trace.exporters.lost_requests import count_lost_of_dead_processes
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.processor import ScoringSpanProcessor
from ragas_trace.exporters.spool import Spool
from ragas_trace.judges import resolve_judge
from ragas_trace.judges.base import Judge
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.breaker import CircuitBreaker
from ragas_trace.scorer.pricing import JudgePricing, judge_pricing
from ragas_trace.scorer.sampler import AlwaysRule, Sampler

logger = logging.getLogger("ragas_trace")


@dataclass
class ScoringPipeline:
    processor: ScoringSpanProcessor
    scorer: BackgroundScorer
    sampler: Sampler
    metrics: ScorerMetrics
    settings: Settings
    annotations: AnnotationSinks | None = None


def make_judge(settings: Settings, judge: Judge | str | None = None) -> Judge:
    """``judge`` if it is a judge object, else the one ``settings.judge`` names.

    The OpenAI judge gets ``judge_model`` / ``embedding_model`` when set (it reads
    ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` itself); the local judge gets
    ``local_checker`` when set. Raises ``ValueError`` for an
    unknown name and ``ImportError`` naming the extra when a judge's extra is missing.
    """
    if judge is not None and not isinstance(judge, str):
        if not isinstance(judge, Judge):
            raise ValueError(f"judge must be 'local', 'openai' or a Judge, got {judge!r}")
        return judge
    spec = (judge or settings.judge).strip().lower()
    if spec == "off":
        raise ValueError("judge 'off' scores nothing here: setup(judge='off') exports the "
                         "spans for a ragas-trace serve sidecar to score; choose local or "
                         "openai where scores are computed")
    if spec == "openai" and (settings.judge_model or settings.embedding_model):
        from ragas_trace.judges.openai_judge import OpenAIJudge

        return OpenAIJudge(model=settings.judge_model, embedding_model=settings.embedding_model)
    if spec == "local" and settings.local_checker:
        from ragas_trace.judges.local import LocalJudge

        return LocalJudge(checker=settings.local_checker)
    return resolve_judge(spec)


def content_policy(settings: Settings, redact: Redactor | None = None) -> ContentPolicy:
    """The export content policy; ``redact`` given alone implies mode ``redact``."""
    mode = settings.content
    if redact is not None and mode == "keep":
        mode = "redact"
    return ContentPolicy(mode, redact, settings.max_content_chars)


def pricing_for(settings: Settings, judge: Judge) -> JudgePricing | None:
    """The judge's prices (``judge_prices`` over the defaults). Without a price for a
    model the judge calls, a USD budget is refused (``ValueError`` naming the model and
    the setting); with no budget the cost is not counted, which is logged."""
    pricing, missing = judge_pricing(judge, settings.judge_prices)
    if pricing is not None:
        return pricing
    names = ", ".join(repr(m) for m in missing)
    if settings.judge_budget_usd_per_day:
        raise ValueError(
            f"ragas-trace setting 'judge_budget_usd_per_day': no price for the judge's "
            f"model {names}; give it with judge_prices (RAGAS_TRACE_JUDGE_PRICES), e.g. "
            f"'{missing[0]}=0.15/0.60' (input/output USD per million tokens)")
    logger.info("ragas-trace: no price for the judge's model %s: ragas_judge_cost_usd_total "
                "is not counted (set judge_prices)", names)
    return None


def annotation_sinks(settings: Settings, metrics: ScorerMetrics, policy: ContentPolicy,
                     thresholds: Mapping[str, float]) -> AnnotationSinks | None:
    """The Phoenix / Langfuse sinks ``settings.annotations`` turns on, or ``None``."""
    chosen = backends(
        settings.annotations, phoenix_endpoint=settings.phoenix_endpoint,
        phoenix_api_key=settings.phoenix_api_key, langfuse_host=settings.langfuse_host,
        langfuse_public_key=settings.langfuse_public_key,
        langfuse_secret_key=settings.langfuse_secret_key, thresholds=thresholds)
    if not chosen:
        return None
    return AnnotationSinks(chosen, metrics, policy, thresholds,
                           max_queued=settings.annotation_queue_size,
                           retry_for_s=settings.annotation_retry_s)


def build_pipeline(
    settings: Settings,
    downstream: SpanProcessor | SpanExporter | None,
    *,
    judge: Judge | str | None = None,
    meter_provider: MeterProvider | None = None,
    redact: Redactor | None = None,
    always: AlwaysRule | None = None,
    evaluation_tracer: Tracer | None = None,
    service: str | None = None,
    app_label: Callable[[ReadableSpan], str] | None = None,
    logger_provider: LoggerProvider | None = None,
) -> ScoringPipeline:
    """Everything behind a ``ScoringSpanProcessor`` wired to ``downstream``.

    ``service`` (default ``settings.service_name``) is the metrics' ``service`` label;
    ``app_label`` gives their ``app`` label for a root span (default: its
    ``ragas.app.name``, else the ``app_name`` setting, else ``unknown``);
    ``logger_provider``, when given, gets the ``gen_ai.evaluation.result`` log records
    (the caller decides, by ``settings.evaluation_logs``). Raises ``ValueError`` for a
    USD budget on a judge model without a price.
    Nothing starts until the first record arrives; call ``processor.shutdown()``.
    """
    policy = content_policy(settings, redact)
    resolved = make_judge(settings, judge)
    pricing = pricing_for(settings, resolved)
    scorer = BackgroundScorer(
        resolved,
        concurrency=settings.concurrency,
        queue_size=settings.queue_size,
        timeout_s=settings.effective_score_timeout_s,
        breaker=CircuitBreaker(settings.breaker_failures, settings.breaker_reset_s),
    )
    sampler = Sampler(
        settings.sample_rate,
        max_per_minute=settings.max_evaluations_per_minute,
        token_budget_per_hour=settings.judge_token_budget_per_hour,
        usd_budget_per_day=settings.judge_budget_usd_per_day,
        always_attribute=settings.always_score_attribute,
        always=always,
    )
    metrics = ScorerMetrics(meter_provider or NoOpMeterProvider(),
                            service or settings.service_name or "",
                            max_apps=settings.max_app_labels)
    thresholds = settings.thresholds_for(resolved)
    annotations = annotation_sinks(settings, metrics, policy, thresholds)
    spool_path = settings.spool_path
    spool = Spool(spool_path, max_bytes=int(settings.spool_max_mb * 1024 * 1024),
                  max_entries=settings.spool_max_entries,
                  on_event=metrics.spool) if spool_path is not None else None
    processor = ScoringSpanProcessor(
        downstream,
        scorer,
        sampler=sampler,
        hold_timeout_s=settings.hold_timeout_s,
        max_held_spans=settings.max_held_spans,
        max_open_traces=settings.max_open_traces,
        thresholds=thresholds,
        content_policy=policy,
        metrics=metrics,
        evaluation_spans=settings.emit_evaluation_spans,
        evaluation_project=settings.evaluation_project,
        evaluation_tracer=evaluation_tracer,
        annotations=annotations,
        app_label=app_label or AppLabel(default=settings.app_name),
        pricing=pricing,
        evaluation_logs=(EvaluationLogs(logger_provider, policy, thresholds)
                         if logger_provider is not None else None),
        spool=spool,
    )
    return ScoringPipeline(processor, scorer, sampler, metrics, settings, annotations)


REPLAY_WINDOW = 16  # spooled roots held at once while replaying (within their hold timeout)
# How often a running process looks for what processes that exited after its start
# left in the spool: gunicorn's reload (SIGHUP) starts the new workers before the old
# ones exit, so no later start would take it. One directory listing each time.
SPOOL_WATCH_S = 5.0


def recover_in_background(processor: ScoringSpanProcessor, multiproc_dir: str | None) -> None:
    """Off the app's start-up path: count as lost what ended processes left unsettled
    in ``multiproc_dir`` (``exporters.lost_requests``), then take over what they left
    in the spool (``exporters.spool``), and keep taking it over until shutdown."""
    if multiproc_dir is None and processor.spool is None:
        return

    def recover() -> None:
        try:
            if multiproc_dir is not None:
                count_lost_of_dead_processes(multiproc_dir)
            spool = processor.spool
            while spool is not None:
                # A file at a time, so that workers running together share the work;
                # none is taken once shutdown has begun (its exit path spools).
                while not processor.closing.is_set() and (
                        entries := spool.claim(max_files=1)):
                    processor.replay(entries, window=REPLAY_WINDOW)
                if processor.closing.wait(SPOOL_WATCH_S):
                    return
        except Exception as exc:
            record_internal_error("pipeline.recover", exc)

    _thread_signals.start(threading.Thread(target=recover, name="ragas-trace-recover",
                                           daemon=True))
