"""The background scorer: sampling, circuit breaking and judge calls off the
request path."""

from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.breaker import BreakerState, CircuitBreaker, Permit
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome
from ragas_trace.scorer.sampler import Decision, Sampler, trace_id_sampled

__all__ = [
    "BackgroundScorer",
    "BreakerState",
    "CircuitBreaker",
    "Decision",
    "EvaluationStatus",
    "Outcome",
    "Permit",
    "Sampler",
    "trace_id_sampled",
]
