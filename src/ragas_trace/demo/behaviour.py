"""How the scripted model misbehaves: the share of hallucinated and evasive answers,
optionally drifting upward request by request, drawn from a seeded generator so a
run is reproducible."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from enum import StrEnum


class Mode(StrEnum):
    GROUNDED = "grounded"  # restates the retrieved passage
    HALLUCINATED = "hallucinated"  # same sentence shape, wrong dates, names, numbers
    EVASIVE = "evasive"  # dodges the question


@dataclass
class Behaviour:
    """``hallucination_rate`` applies from the first request; with ``drift_to`` set, the
    share rises linearly to it over ``drift_requests`` requests and stays there."""

    hallucination_rate: float = 0.1
    evasion_rate: float = 0.05
    drift_to: float | None = None
    drift_requests: int = 0
    seed: int = 0
    _rng: random.Random = field(init=False, repr=False)
    _calls: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("hallucination_rate", "evasion_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value!r}")
        if self.drift_to is not None and not 0.0 <= self.drift_to <= 1.0:
            raise ValueError(f"drift_to must be in [0, 1], got {self.drift_to!r}")
        if self.drift_requests < 0:
            raise ValueError(f"drift_requests must be >= 0, got {self.drift_requests!r}")
        if self.hallucination_rate + self.evasion_rate > 1.0:
            raise ValueError("hallucination_rate + evasion_rate must not exceed 1")
        self._rng = random.Random(self.seed)

    def hallucination_share(self, call: int) -> float:
        """The share in force for the ``call``-th request (0-based)."""
        if self.drift_to is None:
            return self.hallucination_rate
        progress = 1.0 if self.drift_requests <= 1 else min(1.0, call / (self.drift_requests - 1))
        share = self.hallucination_rate + (self.drift_to - self.hallucination_rate) * progress
        return min(share, 1.0 - self.evasion_rate)

    def next(self) -> tuple[Mode, random.Random]:
        """The mode of the next answer and a generator to shape it, both seeded by
        call order (the demo calls the model sequentially, so runs repeat exactly)."""
        with self._lock:
            call = self._calls
            self._calls += 1
            draw = self._rng.random()
            shaper = random.Random(self._rng.getrandbits(64))
        if draw < self.evasion_rate:
            return Mode.EVASIVE, shaper
        if draw < self.evasion_rate + self.hallucination_share(call):
            return Mode.HALLUCINATED, shaper
        return Mode.GROUNDED, shaper
