"""What happened to one RAG request's evaluation: the value of
``ragas.evaluation.status`` and the ``status`` label of ``ragas_evaluations_total``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ragas_trace.results import MetricStatus, Scores


class EvaluationStatus(StrEnum):
    SCORED = "scored"  # at least one metric has a value
    NOT_SAMPLED = "not_sampled"  # ratio, per-minute cap or token budget said no
    UNSCORABLE = "unscorable"  # nothing to score (no question / answer): no judge call
    FAILED = "failed"  # the judge failed, or the circuit breaker is open
    TIMEOUT = "timeout"  # per-record judge timeout, or the hold timeout passed first
    DROPPED = "dropped"  # a bound was hit (hold buffer, queue) or shutdown came first
    # Metrics only: the process ended (killed) before the request got another status;
    # counted by another process (exporters.lost_requests). No span carries it.
    LOST = "lost"


@dataclass(frozen=True)
class Outcome:
    """The scorer's answer for one record; ``scores`` is set whenever the judge ran."""

    status: EvaluationStatus
    scores: Scores | None = None
    reason: str | None = None
    duration_s: float = 0.0


_FAILURES = frozenset({MetricStatus.FAILED, MetricStatus.TIMEOUT})


def outcome_of(scores: Scores, duration_s: float) -> Outcome:
    """Classify a judge's ``Scores``: any value is ``scored``; all requested metrics
    failing is ``failed`` (or ``timeout``); otherwise the record had nothing to score."""
    statuses = [r.status for r in scores.results.values()]
    if any(s is MetricStatus.SCORED for s in statuses):
        return Outcome(EvaluationStatus.SCORED, scores, None, duration_s)
    failures = [r for r in scores.results.values() if r.status in _FAILURES]
    if failures:
        status = (EvaluationStatus.TIMEOUT
                  if all(r.status is MetricStatus.TIMEOUT for r in failures)
                  else EvaluationStatus.FAILED)
        return Outcome(status, scores, failures[0].reason or str(failures[0].status), duration_s)
    reason = ",".join(sorted({str(s) for s in statuses})) or "no_metrics"
    return Outcome(EvaluationStatus.UNSCORABLE, scores, reason, duration_s)


def is_judge_failure(outcome: Outcome) -> bool:
    """Whether an outcome counts against the judge in the circuit breaker."""
    return outcome.status in (EvaluationStatus.FAILED, EvaluationStatus.TIMEOUT)
