"""Collector settings as one table: keyword argument, else environment variable, else
default. A bad argument raises naming the parameter; a bad environment value is
logged and the default used. The names are shared by every collector so that one
environment variable tunes LangChain and LlamaIndex capture alike."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    default: float
    minimum: float
    integer: bool

    def resolve(self, value: float | None) -> float:
        if value is not None:
            if not self._valid(value):
                kind = "an integer" if self.integer else "a number"
                raise ValueError(f"{self.name} must be {kind} >= {self.minimum}, got {value!r}")
            return value
        raw = os.environ.get(self.env)
        if raw is None or raw.strip() == "":
            return self.default
        try:
            parsed: float | None = int(raw) if self.integer else float(raw)
        except ValueError:
            parsed = None
        if parsed is None or not self._valid(parsed):
            logger.warning("ignoring %s=%r (must be a number >= %s); using %s",
                           self.env, raw, self.minimum, self.default)
            return self.default
        return parsed

    def _valid(self, value: object) -> bool:
        if isinstance(value, bool):
            return False
        if self.integer and not isinstance(value, int):
            return False
        return isinstance(value, int | float) and value >= self.minimum


MAX_DOCUMENTS = Setting("max_documents", "RAGAS_TRACE_MAX_DOCUMENTS", 100, 0, integer=True)
RUN_TTL_S = Setting("run_ttl_s", "RAGAS_TRACE_RUN_TTL_S", 600.0, 0.0, integer=False)
MAX_OPEN_RUNS = Setting("max_open_runs", "RAGAS_TRACE_MAX_OPEN_RUNS", 10_000, 1, integer=True)
