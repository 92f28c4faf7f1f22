"""Which RAG requests get scored.

- A ratio decided from the trace id, as OpenTelemetry's ``TraceIdRatioBased`` does
  (lower 64 bits against ``rate * 2**64``), so every process that sees the trace
  makes the same decision.
- A cap on evaluations started per minute (sliding window).
- A judge-token budget per rolling hour and a USD budget per rolling day, charged
  with what each evaluation cost. They are checked before a record starts: records
  already with the judge finish, so the spend can pass a budget by what at most
  ``concurrency`` records cost.
- Always-score rules: a truthy attribute (``ragas.evaluation.always`` by default) or
  a user predicate on the finished span. They bypass the ratio and the per-minute
  cap, not the budgets, which are cost ceilings.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.scorer.budget import RollingBudget

logger = logging.getLogger("ragas_trace")

_TRACE_ID_LOW = (1 << 64) - 1
_MINUTE_S = 60.0
_HOUR_S = 3600.0
_DAY_S = 86400.0
TOKEN_BUDGET = "token_budget"
USD_BUDGET = "usd_budget"

AlwaysRule = Callable[[ReadableSpan], bool]


@dataclass(frozen=True)
class Decision:
    sampled: bool
    reason: str  # ratio | always | rate_limit | token_budget | usd_budget


def trace_id_sampled(trace_id: int, rate: float) -> bool:
    """The deterministic ratio decision for ``trace_id``."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return (trace_id & _TRACE_ID_LOW) < round(rate * (1 << 64))


class Sampler:
    """Thread-safe. ``decide`` is called once per finished RAG root span."""

    def __init__(
        self,
        rate: float = 1.0,
        *,
        max_per_minute: int = 0,
        token_budget_per_hour: int = 0,
        usd_budget_per_day: float = 0.0,
        always_attribute: str | None = sc.RAGAS_ALWAYS_SCORE,
        always: AlwaysRule | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"rate must be in [0, 1], got {rate!r}")
        if max_per_minute < 0 or token_budget_per_hour < 0:
            raise ValueError("caps must be >= 0 (0 = no cap)")
        self.rate = rate
        self._max_per_minute = max_per_minute
        self._tokens = RollingBudget(token_budget_per_hour, _HOUR_S)
        self._usd = RollingBudget(usd_budget_per_day, _DAY_S)
        self._always_attribute = always_attribute
        self._always = always
        self._clock = clock
        self._lock = threading.Lock()
        self._starts: deque[float] = deque()
        self._warned = False

    def decide(self, span: ReadableSpan) -> Decision:
        always = self._is_always(span)
        if not always and (span.context is None
                           or not trace_id_sampled(span.context.trace_id, self.rate)):
            return Decision(False, "ratio")
        now = self._clock()
        with self._lock:
            self._expire(now)
            if self._tokens.exhausted(now):
                return Decision(False, TOKEN_BUDGET)
            if self._usd.exhausted(now):
                return Decision(False, USD_BUDGET)
            if not always and self._max_per_minute and len(self._starts) >= self._max_per_minute:
                return Decision(False, "rate_limit")
            self._starts.append(now)
        return Decision(True, "always" if always else "ratio")

    def charge(self, tokens: int, usd: float = 0.0) -> None:
        """Record what one evaluation cost against the budgets: judge tokens (hourly)
        and USD (daily). A count that is not a positive number (a judge's NaN) is not
        charged: added to the total it would keep a budget from ever tripping again."""
        tokens_ok = not isinstance(tokens, bool) and isinstance(tokens, int) and tokens > 0
        usd_ok = isinstance(usd, float | int) and not isinstance(usd, bool) \
            and math.isfinite(usd) and usd > 0
        if not tokens_ok and not usd_ok:
            return
        with self._lock:
            now = self._clock()
            if tokens_ok:
                self._tokens.charge(tokens, now)
            if usd_ok:
                self._usd.charge(usd, now)

    def _expire(self, now: float) -> None:
        while self._starts and now - self._starts[0] >= _MINUTE_S:
            self._starts.popleft()

    def _is_always(self, span: ReadableSpan) -> bool:
        if self._always_attribute:
            value = (span.attributes or {}).get(self._always_attribute)
            if value is True or (isinstance(value, str) and value.lower() in ("true", "1")):
                return True
        if self._always is not None:
            try:
                return bool(self._always(span))
            except Exception as exc:  # a user predicate must not break export
                if not self._warned:
                    self._warned = True
                    logger.warning("the always-score predicate raised %s; treated as false "
                                   "(logged once)", type(exc).__name__)
                return False
        return False
