"""``ScoringSpanProcessor``: holds each finished RAG root span until it is scored,
then exports one copy of it with the ``ragas.*`` attributes; everything else goes
downstream at once.

Threads: ``on_start``/``on_end`` run on the app's threads and only do bounded,
non-blocking bookkeeping (the judge runs on the scorer's loop); scored spans are
exported from the scorer thread, expired ones from the processor's reaper
thread. Nothing is lost: a span that cannot be scored (not sampled, buffer or
queue full, judge failed or too slow, shutdown) is exported unscored with
``ragas.evaluation.status`` saying why."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence

from opentelemetry import context as otel_context
from opentelemetry.context import Context
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter
from opentelemetry.trace import Tracer
from opentelemetry.util.types import AttributeValue

from ragas_trace import _thread_signals
from ragas_trace import semconv as sc
from ragas_trace._deadline import call_within, remaining
from ragas_trace._internal_errors import record_internal_error
from ragas_trace.exporters.annotations import AnnotationSinks
from ragas_trace.exporters.annotations.sinks import Prepared
from ragas_trace.exporters.app_label import AppLabel
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.evaluation_logs import EvaluationLogs
from ragas_trace.exporters.evaluation_span import (
    build_evaluation_span,
    emit_evaluation_span,
    new_trace_id,
)
from ragas_trace.exporters.export_queue import ExportQueue
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.score_attributes import score_attributes
from ragas_trace.exporters.span_copy import copy_span
from ragas_trace.exporters.spool import Spool
from ragas_trace.exporters.spooling import Held, Spooling
from ragas_trace.exporters.trace_buffer import Ended, TraceBuffer
from ragas_trace.extract import extract_record, question_of, span_kind
from ragas_trace.judges.base import judge_thresholds
from ragas_trace.record import RagRecord
from ragas_trace.results import MetricStatus
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome
from ragas_trace.scorer.pricing import JudgePricing
from ragas_trace.scorer.sampler import TOKEN_BUDGET, USD_BUDGET, Sampler

logger = logging.getLogger("ragas_trace")

_ROOT_KINDS = frozenset({"CHAIN", "AGENT"})
_SUPPRESS = otel_context._SUPPRESS_INSTRUMENTATION_KEY
_PARTIAL_STREAMS = frozenset({sc.STREAM_ABANDONED, sc.STREAM_ERROR})
_BUDGETS = frozenset({TOKEN_BUDGET, USD_BUDGET})
EXPORT_RESERVE_S = 1.0
SPOOL_RESERVE_S = 0.5  # of a shutdown with a spool: the last part, for writing it


class ScoringSpanProcessor(Spooling, SpanProcessor):
    """Wraps ``downstream`` (a ``SpanProcessor``, or a ``SpanExporter`` which gets an
    ``ExportQueue``: batching that keeps its deadlines and counts every lost span).
    With ``downstream=None`` nothing is forwarded: use that when the provider's other
    processors already export every span; scores then travel on evaluation spans
    started through ``evaluation_tracer``, and metrics.

    Spans from elsewhere (decoded from OTLP) go in through ``ingest``. ``app_label``
    gives a root's ``app`` metric label (default: its ``ragas.app.name``, else
    ``unknown``; see ``exporters.app_label``). ``pricing`` prices the judge's tokens
    (the cost counter and the USD budget); ``evaluation_logs`` emits the
    ``gen_ai.evaluation.result`` log records. ``spool``: where ``shutdown`` keeps what
    it could not deliver by its deadline (spans not scored yet, spans not exported yet
    and annotations not sent yet), for a later process's ``replay``.
    """

    def __init__(
        self,
        downstream: SpanProcessor | SpanExporter | None,
        scorer: BackgroundScorer,
        *,
        sampler: Sampler | None = None,
        hold_timeout_s: float = 30.0,
        max_held_spans: int = 1000,
        max_open_traces: int = 10000,
        thresholds: Mapping[str, float] | None = None,
        content_policy: ContentPolicy | None = None,
        metrics: ScorerMetrics | None = None,
        evaluation_spans: bool = True,
        evaluation_project: str | None = None,
        evaluation_tracer: Tracer | None = None,
        annotations: AnnotationSinks | None = None,
        app_label: Callable[[ReadableSpan], str] | None = None,
        pricing: JudgePricing | None = None,
        evaluation_logs: EvaluationLogs | None = None,
        spool: Spool | None = None,
    ) -> None:
        if hold_timeout_s <= 0:
            raise ValueError(f"hold_timeout_s must be > 0, got {hold_timeout_s!r}")
        if max_held_spans < 1:
            raise ValueError(f"max_held_spans must be >= 1, got {max_held_spans!r}")
        self.scorer = scorer
        self.sampler = sampler or Sampler()
        self.hold_timeout_s = hold_timeout_s
        self._max_held = max_held_spans
        self.thresholds = dict(thresholds) if thresholds else judge_thresholds(scorer.judge)
        self.policy = content_policy or ContentPolicy()
        self.metrics = metrics or ScorerMetrics(NoOpMeterProvider(), "")
        self.annotations = annotations
        self.pricing = pricing
        self.evaluation_logs = evaluation_logs
        self.spool = spool
        # Spans shutdown spooled or released itself: their scorer callback, if it
        # still comes, changes nothing (no second export, no second count).
        self._handed_over: set[tuple[int, int]] = set()
        self._warned_corrupt = False
        self._dropped_at_shutdown = 0  # roots the shutdown left unscored, for its warning
        # Annotations of a root copy we export wait for its export (see _settled).
        self._awaiting: dict[tuple[int, int], Prepared] = {}
        if isinstance(downstream, SpanExporter):
            downstream = ExportQueue(downstream, on_lost=self.metrics.export_lost,
                                     on_settled=self._settled if annotations else None,
                                     spill=self._spill_exports if spool else None)
        self._downstream = downstream
        self.metrics.observe(held=lambda: self.held_count, queued=lambda: scorer.queued)
        self._evaluation_spans = evaluation_spans
        self._evaluation_project = evaluation_project
        self._evaluation_tracer = evaluation_tracer
        self._app_label = app_label or AppLabel()
        self._traces = TraceBuffer(max_open_traces)
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._held: dict[tuple[int, int], Held] = {}
        self._closed = False
        self.closing = threading.Event()  # set at shutdown: the spool is no longer taken from
        self._start_reaper()
        _processors.add(self)

    def _start_reaper(self) -> None:
        self._reaper = threading.Thread(target=self._reap, name="ragas-trace-hold-reaper",
                                        daemon=True)
        _thread_signals.start(self._reaper)

    @property
    def held_count(self) -> int:
        with self._lock:
            return len(self._held)

    # -- SpanProcessor ---------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            self._started(span, track=False)
        except Exception as exc:
            record_internal_error("processor.on_start", exc)
        if self._downstream is not None:
            self._downstream.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        try:
            self._ended(span)
        except Exception as exc:
            record_internal_error("processor.on_end", exc)
            self._forward(span)

    def ingest(self, spans: Sequence[ReadableSpan]) -> None:
        """Spans that did not start in this process (e.g. one OTLP request's batch):
        replayed as starts in start order, then ends in end order."""
        try:
            for span in sorted(spans, key=lambda s: s.start_time or 0):
                self._started(span, track=True)
        except Exception as exc:
            record_internal_error("processor.ingest", exc)
        for span in sorted(spans, key=lambda s: s.end_time or 0):
            self.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wait for scoring in progress (its spans then leave), then flush downstream,
        then the annotations (sent once their spans left); all within the timeout (the
        last part of it, up to 1 s, kept for the export, and with annotations the last
        part of that for them). ``False`` if something was not done or not delivered.
        Never raises."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000.0
        drained = self.scorer.drain(remaining(_judge_deadline(deadline)))
        if self.annotations is None:
            return self._flush_downstream(deadline) and drained
        # Annotations leave after their spans' export: theirs is the last part.
        exported = self._flush_downstream(_judge_deadline(deadline))
        annotated = self.annotations.force_flush(remaining(deadline))
        return exported and drained and annotated

    def stop_scoring(self, timeout_s: float) -> bool:
        """Give the judge up to ``timeout_s`` to finish what it has, then stop it: the
        rest, and every RAG span ending later, leave unscored as ``dropped`` /
        ``shutdown`` (never judge failures). Spans keep being exported until
        ``shutdown``. The exit path calls it while the interpreter can still run the
        judge's I/O."""
        return self.scorer.shutdown(max(0.0, timeout_s))

    def shutdown(self, timeout_s: float | None = None) -> bool:  # type: ignore[override]
        """Drain the scorer, export every span still held, shut downstream; all within
        ``timeout_s`` (default: the hold timeout + 1 s, which no held span outlives),
        the last part of it (up to 1 s) kept for the export. ``False`` if something
        was not scored in time or not delivered. Never raises. The SDK calls it
        without arguments and ignores the ``bool``."""
        if timeout_s is None:
            timeout_s = self.hold_timeout_s + 1.0
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._lock:
            if self._closed:
                return True
            self._closed = True
            self.closing.set()
            self._wake.notify_all()
        drained = self.scorer.shutdown(remaining(_judge_deadline(deadline)))
        with self._lock:
            leftovers = list(self._held.items())
            self._held.clear()
            self._handed_over.update(key for key, _ in leftovers)
        spooled = self._spool_held([held for _, held in leftovers])
        for held in [held for _, held in leftovers][spooled:]:
            self._dropped_at_shutdown += 1
            self._count_dropped(held.span, "shutdown")
            self._release(held.span, EvaluationStatus.DROPPED, "shutdown")
        if self._dropped_at_shutdown:
            logger.warning("ragas-trace: %d RAG request(s) left unscored at shutdown "
                           "(exported with status dropped, reason shutdown%s); counted in "
                           "ragas_evaluations_total", self._dropped_at_shutdown,
                           "; the spool did not take them" if self.spool else
                           "; a spool (spool_dir) would keep them for the next start")
        # With a spool, its write keeps the last part (what is left then goes there).
        end = deadline - (min(SPOOL_RESERVE_S, remaining(deadline) / 4) if self.spool else 0)
        if self.annotations is None:
            delivered, annotated = self._shutdown_downstream(end), True
        else:  # annotations leave after their spans' export: theirs is the last part
            delivered = self._shutdown_downstream(_judge_deadline(end))
            annotated = self.annotations.shutdown(
                remaining(end), spill=self._spill_annotations if self.spool else None)
        self._reaper.join(min(0.1, remaining(deadline)))
        return drained and delivered and annotated and not leftovers

    def _started(self, span: ReadableSpan, track: bool) -> None:
        root_kind = span_kind(span) in _ROOT_KINDS
        self._traces.started(span, root_kind, root_kind and question_of(span) is not None, track)

    def _ended(self, span: ReadableSpan) -> None:
        # On the app's thread: only bookkeeping here; the record is extracted on the
        # scorer thread.
        kind = span_kind(span)
        candidate = kind in _ROOT_KINDS and question_of(span) is not None
        ended = self._traces.ended(span, kind, candidate)
        if ended is Ended.OTHER:
            self._forward(span)
            return
        self.metrics.request(self._app_label(span), self.scorer.judge_name)
        if ended is Ended.ROOT_WITHOUT_QUESTION:
            self._unscorable(span, str(MetricStatus.NO_QUESTION))
            return
        descendants = self._traces.take(span)
        if not descendants and span.context and self._traces.was_evicted(span.context.trace_id):
            self._drop(span, "open_traces_full")  # its passages were forgotten
            return
        attrs = span.attributes or {}
        if attrs.get(sc.RAGAS_RUN_CANCELLED) is True:
            self._unscorable(span, "cancelled")  # no answer was given
            return
        stream_status = attrs.get(sc.RAGAS_STREAM_STATUS)
        if stream_status in _PARTIAL_STREAMS:
            # The answer is what the user read before the stream stopped: scoring it
            # would grade an answer nobody gave.
            self._unscorable(span, f"stream_{stream_status}")
            return
        decision = self.sampler.decide(span)
        if not decision.sampled:
            if decision.reason in _BUDGETS:
                self.metrics.over_budget(decision.reason)
            self.metrics.not_scored(EvaluationStatus.NOT_SAMPLED, self._app_label(span),
                                    self.scorer.judge_name)
            self._release(span, EvaluationStatus.NOT_SAMPLED, decision.reason)
            return
        self._hold(span, descendants)

    def _hold(self, span: ReadableSpan, descendants: Sequence[ReadableSpan]) -> None:
        """Hold a sampled root and hand it to the scorer."""
        key = self._key(span)
        with self._lock:
            refused = ("shutdown" if self._closed
                       else "hold_full" if len(self._held) >= self._max_held else None)
            if refused is None:
                self._held[key] = Held(span, time.monotonic() + self.hold_timeout_s,
                                        descendants if self.spool is not None else ())
                if len(self._held) == 1:
                    self._wake.notify()
        if refused is not None:
            self._drop(span, refused)
            return
        source = functools.partial(extract_record, [span, *descendants], root=span)
        # The RETRIEVER spans, for per-passage annotations of the passages they returned.
        retrievers = [d for d in descendants if span_kind(d) == "RETRIEVER"] \
            if self.annotations is not None else []
        if not self.scorer.submit(source, functools.partial(self._scored, span, retrievers)):
            if self.spool is not None and self.scorer.closed:
                return  # the exit path stopped the judge: shutdown spools it
            with self._lock:
                still_held = self._held.pop(key, None) is not None
            if still_held:
                self._drop(span, "shutdown" if self.scorer.closed else "queue_full")

    def _scored(self, span: ReadableSpan, retrievers: list[ReadableSpan],
                record: RagRecord | None, outcome: Outcome) -> None:
        """Scorer thread: the judge's answer for ``span``."""
        key = self._key(span)
        with self._lock:
            if key in self._handed_over:
                self._handed_over.discard(key)
                return  # shutdown spooled or released it already
            if (self.spool is not None and outcome.status is EvaluationStatus.DROPPED
                    and outcome.reason == "shutdown" and key in self._held):
                return  # the judge was stopped: shutdown spools it, unscored and uncounted
        judge = self.scorer.judge_name
        app = self._app_label(span)
        if outcome.status is EvaluationStatus.DROPPED and outcome.reason == "shutdown":
            self._dropped_at_shutdown += 1
        self.metrics.evaluation(outcome, app, judge, self.thresholds,
                                model=record.model if record is not None else None,
                                evaluated=span.context)
        if outcome.status is EvaluationStatus.DROPPED:
            self.metrics.dropped(outcome.reason or "dropped")
        if outcome.scores is not None:
            usage = outcome.scores.usage
            usd = self.pricing.cost_usd(usage) if self.pricing is not None else 0.0
            self.sampler.charge(usage.total_tokens, usd)
            if self.pricing is not None:
                self.metrics.cost(usd, app, judge)
        with self._lock:
            held = self._held.pop(self._key(span), None)
        scored = outcome.status is EvaluationStatus.SCORED
        evaluation_trace = new_trace_id() if scored and self._evaluation_spans else None
        prepared = self._prepare_annotations(span, retrievers, record, outcome, judge) \
            if scored else None
        if held is not None:
            added = score_attributes(outcome, judge, self.thresholds)
            if evaluation_trace is not None and self._downstream is not None:
                added[sc.RAGAS_EVALUATION_TRACE_ID] = f"{evaluation_trace:032x}"
            if prepared is not None and isinstance(self._downstream, ExportQueue):
                with self._lock:  # before the export, which may end at once
                    self._awaiting[self._key(span)] = prepared
                prepared = None
            self._export_root(span, added)
        if evaluation_trace is not None:
            self._emit_evaluation(span, outcome, judge, evaluation_trace)
        if self.evaluation_logs is not None:
            self._emit_logs(span, outcome, judge, record)
        if prepared is not None:
            # Exported already (by the provider's own processors, or a processor we
            # cannot watch): the backend retries what it does not have yet.
            self._deliver_annotations(prepared)

    def _prepare_annotations(self, span: ReadableSpan, retrievers: list[ReadableSpan],
                             record: RagRecord | None, outcome: Outcome, judge: str
                             ) -> Prepared | None:
        if self.annotations is None:
            return None
        try:
            return self.annotations.prepare(span, outcome, judge, record, retrievers)
        except Exception as exc:
            record_internal_error("processor.annotations", exc)
            return None

    def _deliver_annotations(self, prepared: Prepared) -> None:
        if self.annotations is None:
            return
        try:
            self.annotations.deliver(prepared)
        except Exception as exc:
            record_internal_error("processor.annotations", exc)

    def _settled(self, spans: Sequence[ReadableSpan], exported: bool) -> None:
        """Export worker (or the thread a span was refused on): the annotations of the
        root copies among ``spans`` go out now, or are counted lost with them."""
        with self._lock:
            if not self._awaiting:
                return
            ready = [p for p in (self._awaiting.pop(self._key(s), None) for s in spans)
                     if p is not None]
        if self.annotations is None:
            return
        for prepared in ready:
            if exported:
                self._deliver_annotations(prepared)
            else:
                self.annotations.lose(prepared, "the evaluated span was not exported")

    def _unscorable(self, span: ReadableSpan, reason: str) -> None:
        """A request with nothing the judge could score: counted, and exported with
        ``unscorable`` and the reason, without a judge call."""
        app, judge = self._app_label(span), self.scorer.judge_name
        self.metrics.not_scored(EvaluationStatus.UNSCORABLE, app, judge)
        self.metrics.faithfulness_unscored(reason, app, judge)
        self._release(span, EvaluationStatus.UNSCORABLE, reason)

    def _drop(self, span: ReadableSpan, reason: str) -> None:
        self._count_dropped(span, reason)
        self._release(span, EvaluationStatus.DROPPED, reason)

    def _count_dropped(self, span: ReadableSpan, reason: str) -> None:
        self.metrics.dropped(reason)
        self.metrics.not_scored(EvaluationStatus.DROPPED, self._app_label(span),
                                self.scorer.judge_name)

    def _release(self, span: ReadableSpan, status: EvaluationStatus, reason: str) -> None:
        self._export_root(span, score_attributes(Outcome(status, reason=reason),
                                                 self.scorer.judge_name, self.thresholds))

    def _export_root(self, span: ReadableSpan, added: Mapping[str, AttributeValue]) -> None:
        attrs = span.attributes or {}
        if self.policy.passthrough:
            self._send(copy_span(span, attrs, added))
            return
        self._send(copy_span(span, self.policy.attributes(attrs), added,
                             events=self.policy.events(span), status=self.policy.status(span)))

    def _forward(self, span: ReadableSpan) -> None:
        self._send(self.policy.apply(span))

    def _send(self, span: ReadableSpan) -> None:
        if self._downstream is None:
            return
        token = otel_context.attach(otel_context.set_value(_SUPPRESS, True))
        try:
            self._downstream.on_end(span)
        except Exception as exc:
            record_internal_error("processor.downstream", exc)
        finally:
            otel_context.detach(token)

    def _emit_evaluation(self, span: ReadableSpan, outcome: Outcome, judge: str,
                         trace_id: int) -> None:
        if self._downstream is not None:
            evaluation = build_evaluation_span(span, outcome, judge, self.thresholds, trace_id,
                                               project=self._evaluation_project)
            if evaluation is not None:
                self._send(self.policy.apply(evaluation))
        elif self._evaluation_tracer is not None:
            emit_evaluation_span(self._evaluation_tracer, span, outcome, judge, self.thresholds)

    def _emit_logs(self, span: ReadableSpan, outcome: Outcome, judge: str,
                   record: RagRecord | None) -> None:
        if self.evaluation_logs is None:
            return
        try:
            self.evaluation_logs.emit(span, outcome, judge,
                                      record.response_id if record is not None else None)
        except Exception as exc:
            record_internal_error("processor.evaluation_logs", exc)

    def _flush_downstream(self, deadline: float) -> bool:
        downstream = self._downstream
        if downstream is None:
            return True
        left = remaining(deadline)
        if isinstance(downstream, ExportQueue):
            return downstream.force_flush(int(left * 1000))
        return call_within(lambda: downstream.force_flush(int(left * 1000)), left,
                           "downstream flush")

    def _shutdown_downstream(self, deadline: float) -> bool:
        downstream = self._downstream
        if downstream is None:
            return True
        if isinstance(downstream, ExportQueue):
            return downstream.shutdown(int(remaining(deadline) * 1000))
        flushed = self._flush_downstream(deadline)
        return call_within(downstream.shutdown, max(0.05, remaining(deadline)),
                           "downstream shutdown") and flushed

    def _reap(self) -> None:
        """Export held spans whose hold timeout passed; forget stale traces."""
        otel_context.attach(otel_context.set_value(_SUPPRESS, True))
        while True:
            with self._lock:
                if self._closed:
                    return
                now = time.monotonic()
                expired, next_deadline = self._take_expired(now)
                if not expired:
                    self._wake.wait(min(1.0, max(0.0, next_deadline - now)))
            self._release_expired(expired)
            self._traces.expire()

    def _take_expired(self, now: float) -> tuple[list[ReadableSpan], float]:
        """Under the lock: the held spans whose hold timeout passed, and when the next
        one's does. A function of its own so that no local of the reaper's keeps a held
        span (its passages and answer) alive after it is scored."""
        # One hold timeout for all, so insertion order is deadline order.
        spans: list[ReadableSpan] = []
        for key, held in list(self._held.items()):
            if held.deadline > now:
                return spans, held.deadline
            spans.append(self._held.pop(key).span)
        return spans, now + 1.0

    def _release_expired(self, spans: list[ReadableSpan]) -> None:
        for span in spans:
            try:
                self.metrics.dropped("hold_timeout")
                self._release(span, EvaluationStatus.TIMEOUT, "hold_timeout")
            except Exception as exc:
                record_internal_error("processor.reaper", exc)

    @staticmethod
    def _key(span: ReadableSpan) -> tuple[int, int]:
        ctx = span.context
        return (ctx.trace_id, ctx.span_id) if ctx is not None else (0, 0)


def _judge_deadline(deadline: float) -> float:
    """Of a flush or shutdown deadline, the part the judge gets: up to the last second
    (at most half of the time left) is kept for exporting what it scored."""
    return deadline - min(EXPORT_RESERVE_S, remaining(deadline) / 2)


_processors: weakref.WeakSet[ScoringSpanProcessor] = weakref.WeakSet()


def _reinit_after_fork() -> None:
    # Threads do not survive fork: a child (e.g. a pre-forking web server's worker)
    # gets a fresh lock and reaper; spans the parent held are the parent's to export.
    for processor in list(_processors):
        processor._lock = threading.Lock()
        processor._wake = threading.Condition(processor._lock)
        processor._held.clear()
        processor._awaiting.clear()
        processor._handed_over.clear()
        processor._traces = TraceBuffer(processor._traces.max_traces)
        if not processor._closed:
            processor._start_reaper()


os.register_at_fork(after_in_child=_reinit_after_fork)
