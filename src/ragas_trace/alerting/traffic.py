"""Synthetic scored traffic, sampled the way Prometheus scrapes what the library
exports: per app, cumulative ``ragas_faithfulness_bucket/_sum/_count``,
``ragas_faithfulness_squares_total``, ``ragas_evaluations_total{status="scored"}`` and
the faithfulness verdicts ``ragas_verdicts_total{metric="faithfulness",label=...}`` at
every scrape, with the histogram buckets of ``exporters.metrics``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragas_trace.exporters.metrics import SCORE_BUCKETS

LABEL_NAMES = ("service", "app", "judge")
# A verdict fails below the threshold of the judge that ships (the local judge's
# faithfulness threshold; a test keeps the two equal), as the library labels it.
FAIL_BELOW = 0.35


@dataclass(frozen=True)
class ScoreMix:
    """Healthy scores and the unfaithful ones a drop mixes in (both bootstrapped)."""

    healthy: np.ndarray
    bad: np.ndarray

    @classmethod
    def of(cls, healthy: Sequence[float], bad: Sequence[float]) -> ScoreMix:
        arrays = []
        for name, values in (("healthy", healthy), ("bad", bad)):
            array = np.asarray(values, dtype=float)
            if array.ndim != 1 or array.size == 0:
                raise ValueError(f"{name} scores must be a non-empty list of numbers")
            if not np.all((array >= 0.0) & (array <= 1.0)):
                raise ValueError(f"{name} scores must lie in [0, 1]")
            arrays.append(array)
        return cls(arrays[0], arrays[1])

    def bad_share(self, drop: float) -> float:
        """The share of requests drawn from the bad scores that lowers the mean by
        ``drop``."""
        gap = float(self.healthy.mean() - self.bad.mean())
        if drop < 0:
            raise ValueError(f"drop must not be negative, got {drop}")
        if drop > 0 and (gap <= 0 or drop > gap):
            raise ValueError(f"a drop of {drop} is more than the healthy mean "
                             f"{self.healthy.mean():.3f} minus the bad mean "
                             f"{self.bad.mean():.3f} allows")
        return drop / gap if drop else 0.0


@dataclass(frozen=True)
class Change:
    """From ``at_s`` on, the bad share rises to ``share`` (at once, or linearly over
    ``ramp_s``)."""

    at_s: float
    share: float
    ramp_s: float = 0.0

    def share_at(self, t_s: np.ndarray) -> np.ndarray:
        if self.ramp_s <= 0:
            return np.where(t_s >= self.at_s, self.share, 0.0)
        progress = np.clip((t_s - self.at_s) / self.ramp_s, 0.0, 1.0)
        return self.share * progress


def scrape_series(
    mix: ScoreMix, change: Change | None, *, scored_per_s: float, step_s: int, steps: int,
    labels: dict[str, str], rng: np.random.Generator, fail_below: float = FAIL_BELOW,
) -> dict[str, np.ndarray]:
    """Series selector -> cumulative value at each of ``steps + 1`` scrapes (the first
    at time 0, before any request)."""
    counts = rng.poisson(scored_per_s * step_s, size=steps)
    total = int(counts.sum())
    # Each request's time: its scrape interval's end (what a scrape sees).
    ends = np.repeat(np.arange(1, steps + 1) * step_s, counts).astype(float)
    share = change.share_at(ends) if change is not None else np.zeros(total)
    from_bad = rng.random(total) < share
    scores = np.where(from_bad, rng.choice(mix.bad, size=total),
                      rng.choice(mix.healthy, size=total))
    interval = np.repeat(np.arange(steps), counts)

    def cumulative(weights: np.ndarray) -> np.ndarray:
        per_step = np.bincount(interval, weights=weights, minlength=steps)
        return np.concatenate([[0.0], np.cumsum(per_step)])

    base = ",".join(f'{k}="{labels[k]}"' for k in LABEL_NAMES)
    ones = np.ones(total)
    series = {
        f"ragas_faithfulness_sum{{{base}}}": cumulative(scores),
        f"ragas_faithfulness_count{{{base}}}": cumulative(ones),
        f"ragas_faithfulness_squares_total{{{base}}}": cumulative(scores * scores),
        f'ragas_evaluations_total{{{base},status="scored"}}': cumulative(ones),
    }
    failed = (scores < fail_below).astype(float)
    for label, weights in (("fail", failed), ("pass", 1.0 - failed)):
        series[f'ragas_verdicts_total{{{base},metric="faithfulness",label="{label}"}}'] = (
            cumulative(weights))
    for bound in (*SCORE_BUCKETS, float("inf")):
        le = "+Inf" if bound == float("inf") else str(bound)
        series[f'ragas_faithfulness_bucket{{{base},le="{le}"}}'] = cumulative(
            (scores <= bound).astype(float))
    return series
