"""``AnnotationSinks``: the backends named by the ``annotations`` setting, each behind
its own bounded queue. The processor prepares the annotations of every scored
request and delivers them once the evaluated span was exported (an annotation sent
before its span is one the backend cannot store), or counts them lost when the
span never was."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.exporters.annotations.queue import AnnotationBackend, AnnotationQueue, Spill
from ragas_trace.exporters.annotations.scores import ScoreAnnotation, score_annotations
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.record import RagRecord
from ragas_trace.scorer.outcome import Outcome

logger = logging.getLogger("ragas_trace")

NAMES = ("phoenix", "langfuse")

Prepared = list[list[ScoreAnnotation]]  # per queue, in the sinks' order


def annotation_names(value: object) -> tuple[str, ...]:
    """Parser of the ``annotations`` setting: a comma list (or sequence) of ``NAMES``;
    ``none`` or empty turns every sink off."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence):
        raise ValueError(f"expected a comma list of {', '.join(NAMES)}, got {value!r}")
    names: list[str] = []
    for item in items:
        name = str(item).strip().lower()
        if name in ("", "none", "off"):
            continue
        if name not in NAMES:
            raise ValueError(f"expected a comma list of {', '.join(NAMES)}, got {value!r}")
        if name not in names:
            names.append(name)
    return tuple(names)


class AnnotationSinks:
    """Fans scored requests out to each backend's queue. ``submit`` runs on the
    scorer's thread, never blocks, and never raises for a backend's trouble."""

    def __init__(self, backends: Sequence[AnnotationBackend], metrics: ScorerMetrics,
                 policy: ContentPolicy, thresholds: Mapping[str, float], *,
                 max_queued: int = 10_000, retry_for_s: float = 30.0) -> None:
        self._queues = [AnnotationQueue(b, metrics, max_queued=max_queued,
                                        retry_for_s=retry_for_s) for b in backends]
        self._policy = policy
        self._thresholds = dict(thresholds)

    @property
    def names(self) -> list[str]:
        return [q.backend.name for q in self._queues]

    def prepare(self, span: ReadableSpan, outcome: Outcome, judge: str,
                record: RagRecord | None = None,
                retrievers: Sequence[ReadableSpan] = ()) -> Prepared:
        """The annotations of one request for each backend (empty unless scored)."""
        annotations = score_annotations(span, outcome, judge, self._thresholds, self._policy,
                                        record, retrievers)
        return [[a for a in annotations if q.backend.keep(a)] for q in self._queues]

    def deliver(self, prepared: Prepared) -> None:
        for queue, items in zip(self._queues, prepared, strict=True):
            queue.offer(items)

    def lose(self, prepared: Prepared, why: str) -> None:
        for queue, items in zip(self._queues, prepared, strict=True):
            queue.lost(len(items), why)

    def submit(self, span: ReadableSpan, outcome: Outcome, judge: str,
               record: RagRecord | None = None,
               retrievers: Sequence[ReadableSpan] = ()) -> None:
        self.deliver(self.prepare(span, outcome, judge, record, retrievers))

    def force_flush(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        return all([q.force_flush(max(0.0, deadline - time.monotonic()))
                    for q in self._queues])

    def shutdown(self, timeout_s: float, spill: Spill | None = None) -> bool:
        """``spill(sink, annotations)``: where what is still queued at the deadline
        goes (the spool); it returns how many it took, and the rest are lost."""
        # One deadline for all: every queue sends in parallel until it.
        deadline = time.monotonic() + timeout_s
        closing = [q for q in self._queues if q.close(deadline, spill)]
        return all([q.join(deadline) for q in closing])
