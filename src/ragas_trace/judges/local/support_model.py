"""The fitted part of the local judge: logistic models that turn a statement's
measured evidence (``features``, ``framing``) into the probability that the context
supports it, one that turns the answer's statements' supports and its evidence as a
whole into its faithfulness (the probability that it holds no unsupported statement),
and the pass/fail thresholds chosen for this judge.

The weights are plain arrays in ``data/support_model.json`` (no pickle: nothing in
the file runs), written by ``tools/fit_local_judge.py`` from public labelled data
(the file records which, with the cross-validated figures).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

MODEL_FILE = Path(__file__).with_name("data") / "support_model.json"


class SupportModelError(RuntimeError):
    """The model file is missing a part or does not match the features measured."""


@dataclass(frozen=True)
class LogisticModel:
    """p = sigmoid(coef . (x - mean) / scale + intercept), features by name."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def probability(self, values: Mapping[str, float]) -> float:
        x = np.array([values[name] for name in self.features], dtype=np.float64)
        z = float(((x - self.mean) / self.scale) @ self.coef) + self.intercept
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(self.features), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "coef": self.coef.tolist(),
                "intercept": self.intercept}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], expected: Sequence[str]) -> LogisticModel:
        features = tuple(str(f) for f in data["features"])
        if set(features) != set(expected):
            raise SupportModelError(f"model features {sorted(features)} differ from the "
                                    f"measured ones {sorted(expected)}: refit the model")
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
        if any(a.shape != (len(features),) or not np.all(np.isfinite(a)) for a in arrays):
            raise SupportModelError("model arrays do not match its features")
        return cls(features, arrays[0], arrays[1], arrays[2], float(data["intercept"]))


# Shares of 0 and 1 have no log-odds: an answer with no word in the context counts
# as one in a thousand.
_EDGE = 1e-3


def _log_odds(share: float) -> float:
    share = min(1.0 - _EDGE, max(_EDGE, share))
    return math.log(share / (1.0 - share))


def toward_overlap(probability: float, overlap: float, weight: float) -> float:
    """The answer model's probability with its log-odds moved toward those of word
    overlap (the share of the answer's words the context holds) by ``weight``: the
    fit reads overlap beside the other evidence, but on a kind of data it was not
    fitted on it leans on that other evidence too much."""
    z = (1.0 - weight) * _log_odds(probability) + weight * _log_odds(overlap)
    return 1.0 / (1.0 + math.exp(-z))


@dataclass(frozen=True)
class SupportModels:
    statement: LogisticModel  # a sentence of the answer
    short: LogisticModel  # a bare entity, number or phrase, read with the question
    # The statement model fitted with one intercept per data set: what tells supported
    # from unsupported statements within a set (tools/fit_local_judge.py).
    statement_within: LogisticModel
    answer: LogisticModel  # the answer's faithfulness from its statements' supports
    thresholds: Mapping[str, float]  # per metric: pass at or above
    lexical_weight: float  # how far faithfulness leans toward word overlap

    def faithfulness(self, values: Mapping[str, float]) -> float:
        """The answer's faithfulness from its evidence as a whole and its statements'
        supports (``combine.with_supports``)."""
        return toward_overlap(self.answer.probability(values), values["word_overlap"],
                              self.lexical_weight)


@cache
def load_models(path: Path = MODEL_FILE) -> SupportModels:
    from ragas_trace.judges.local.combine import ANSWER_FEATURES
    from ragas_trace.judges.local.features import STATEMENT_FEATURES
    from ragas_trace.judges.local.framing import SHORT_FEATURES

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        thresholds = {str(k): float(v) for k, v in data["thresholds"].items()}
        return SupportModels(LogisticModel.from_json(data["statement"], STATEMENT_FEATURES),
                             LogisticModel.from_json(data["short"], SHORT_FEATURES),
                             LogisticModel.from_json(data["statement_within"],
                                                     STATEMENT_FEATURES),
                             LogisticModel.from_json(data["answer"], ANSWER_FEATURES),
                             thresholds, float(data["lexical_weight"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SupportModelError(f"cannot read {path.name}: {exc}") from exc
