"""Answer relevance (paper, section 3): the mean cosine similarity between the
question and the questions a judge generates from the answer alone."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ragas_trace.results import MetricResult, MetricStatus

Vector = Sequence[float] | npt.NDArray[np.floating]


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity; 0.0 when either vector has no length, NaN when the lengths
    overflow (values near 1e300)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if x.shape != y.shape:
        raise ValueError(f"vectors of different sizes: {x.shape} and {y.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    if not np.isfinite(norm):
        return float("nan")
    return float(np.dot(x, y) / norm) if norm > 0.0 else 0.0


def answer_relevance(question: Vector, generated: Sequence[Vector],
                     noncommittal: bool = False) -> MetricResult:
    """Mean of cosine(question, g) over the generated questions, each clamped to
    [0, 1] (an unrelated question must not pull the mean below zero). A noncommittal
    answer ("I don't know") scores 0."""
    if noncommittal:
        return MetricResult.scored(0.0)
    if not generated:
        return MetricResult.unscored(MetricStatus.FAILED, "the judge generated no questions")
    if not all(np.isfinite(np.asarray(v, dtype=np.float64)).all() for v in [question, *generated]):
        return MetricResult.unscored(MetricStatus.FAILED, "embeddings are not finite numbers")
    cosines = [cosine(question, g) for g in generated]
    if not all(np.isfinite(c) for c in cosines):
        return MetricResult.unscored(MetricStatus.FAILED, "embeddings too large")
    similarities = [min(1.0, max(0.0, c)) for c in cosines]
    return MetricResult.scored(float(np.mean(similarities)))
