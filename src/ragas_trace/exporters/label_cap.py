"""A metric label fed by span data (the ``app`` label) takes at most ``limit``
distinct values; later values are folded into ``other``. Without a cap, any sender
picks the number of series: 5,000 run names made 82,080 series and a 16 MB scrape,
and past the SDK's own 2,000 attribute sets per instrument new apps vanished into
its overflow series. The first values seen keep their own series for the life of
the process."""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("ragas_trace")

OTHER = "other"


class LabelCap:
    def __init__(self, label: str, limit: int, setting: str) -> None:
        if limit < 1:
            raise ValueError(f"{setting}: expected at least 1, got {limit}")
        self.label = label
        self.limit = limit
        self._setting = setting
        self._kept: set[str] = set()
        self._lock = threading.Lock()
        self._warned = False

    def value(self, raw: str) -> tuple[str, bool]:
        """The label value to record for ``raw``, and whether it was folded."""
        if raw in self._kept:  # the common case: a set lookup, no lock
            return raw, False
        with self._lock:
            if raw in self._kept:
                return raw, False
            if len(self._kept) < self.limit:
                self._kept.add(raw)
                return raw, False
            warn, self._warned = not self._warned, True
        if warn:
            logger.warning("ragas-trace: more than %d distinct %r label values; the rest "
                           "are recorded as %r (setting %s)", self.limit, self.label, OTHER,
                           self._setting)
        return OTHER, True
