"""A spend limit over a rolling window (judge tokens per hour, USD per day).

Charges are summed into time buckets ``window_s / buckets`` wide (at most ``buckets``
of them are in a window), so memory stays bounded however many evaluations a window
holds. A bucket leaves the window when its start turns ``window_s`` old: a charge
counts for ``window_s`` less at most one bucket width (a minute for a day). Not
thread-safe: the sampler's lock guards it."""

from __future__ import annotations

import math
from collections import deque

DEFAULT_BUCKETS = 1440


class RollingBudget:
    """``limit`` (0 = none) of spend per ``window_s``; the caller passes the clock."""

    def __init__(self, limit: float, window_s: float, buckets: int = DEFAULT_BUCKETS) -> None:
        if not math.isfinite(limit) or limit < 0:
            raise ValueError(f"a budget must be >= 0 (0 = none), got {limit!r}")
        if window_s <= 0 or buckets < 1:
            raise ValueError("a budget needs a window > 0 and at least one bucket")
        self.limit = limit
        self.window_s = window_s
        self._width = window_s / buckets
        self._buckets: deque[tuple[float, float]] = deque()  # (bucket start, spent)
        self.spent = 0.0

    def exhausted(self, now: float) -> bool:
        """Whether the window's spend has reached the limit."""
        if not self.limit:
            return False
        self._expire(now)
        return self.spent >= self.limit

    def charge(self, amount: float, now: float) -> None:
        """Add ``amount`` (positive and finite; anything else is the caller's to refuse)."""
        if not self.limit:
            return
        self._expire(now)
        start = now - now % self._width
        if self._buckets and self._buckets[-1][0] == start:
            self._buckets[-1] = (start, self._buckets[-1][1] + amount)
        else:
            self._buckets.append((start, amount))
        self.spent += amount

    def _expire(self, now: float) -> None:
        while self._buckets and now - self._buckets[0][0] >= self.window_s:
            self.spent -= self._buckets.popleft()[1]
        if not self._buckets:
            self.spent = 0.0  # no rounding left over from the floats taken out
