"""``AnnotationSinks``: the backends named by the ``annotations`` setting, each behind
its own bounded queue; the processor hands it every scored request."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.exporters.annotations.queue import AnnotationBackend, AnnotationQueue
from ragas_trace.exporters.annotations.scores import score_annotations
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.scorer.outcome import Outcome

logger = logging.getLogger("ragas_trace")

NAMES = ("phoenix", "langfuse")


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

    def submit(self, span: ReadableSpan, outcome: Outcome, judge: str) -> None:
        annotations = score_annotations(span, outcome, judge, self._thresholds, self._policy)
        for queue in self._queues:
            queue.offer([a for a in annotations if queue.backend.keep(a)])

    def force_flush(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        return all([q.force_flush(max(0.0, deadline - time.monotonic()))
                    for q in self._queues])

    def shutdown(self, timeout_s: float) -> bool:
        # One deadline for all: every queue sends in parallel until it.
        deadline = time.monotonic() + timeout_s
        closing = [q for q in self._queues if q.close(deadline)]
        return all([q.join(deadline) for q in closing])
