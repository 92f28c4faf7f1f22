"""The combine and calibrate stages: an answer's faithfulness from its statements'
checks.

A brought checker's statements combine as Ragas's HHEM variant has it: the mean of
their probabilities (``mean``). The built-in checker's combine as fitted (``fitted``):
an answer model reads its statements' supports beside the answer's evidence as a
whole (``answer_evidence``: the share of its words the context holds, the facts it
lacks), and its probability is calibrated by leaning its log-odds toward word
overlap (``support_model.toward_overlap``). An answer whose every statement the
context holds word for word is faithful by definition (``copied``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ragas_trace.judges.local.checker import Check, Statement
from ragas_trace.judges.local.evidence import Evidence
from ragas_trace.judges.local.support_model import SupportModels
from ragas_trace.judges.local.tokens import folded, plain_words

# An answer of this many statements or more is read as a whole: its word overlap
# leads; below it, its statements' supports and their evidence do (fitted per part:
# the development data's long answers are ranked by word overlap better than by
# anything measured per statement).
MULTI_STATEMENTS = 3
# Measurements that count only for answers of fewer statements ("<name>_single").
SINGLE = ("mean_support", "mean_similarity")
# What the answer model reads (docs/methods.md has what was tried and left out).
ANSWER_FEATURES = (
    "word_overlap", "word_overlap_multi", "multi", "mean_support_within_multi",
    "missing_facts", *(f"{name}_single" for name in SINGLE),
)


def answer_evidence(statements: Sequence[str], features: Sequence[Mapping[str, float]],
                    evidence: Evidence, answer: str, passage_words: frozenset[str]
                    ) -> dict[str, float]:
    """The answer's evidence as a whole: what the context holds of all its words
    together (one invented phrase in a long answer moves a mean of supports little;
    the answer's score should move more). ``word_overlap`` is the share of the raw
    ``answer``'s distinct content words found among ``passage_words`` (the passages'
    words as written): the baseline every judge is measured against, read by the fit
    beside everything else. ``with_supports`` adds its statements' supports."""
    sentences = [f for f in features if "field_conflicts" in f]  # not a short answer's
    own = set(plain_words(answer))
    overlap = len(own & passage_words) / len(own) if own else 0.0
    multi = float(len(features) >= MULTI_STATEMENTS)
    return {
        "word_overlap": overlap,
        "word_overlap_multi": overlap * multi,
        "multi": multi,
        "missing_facts": math.log1p(sum(f["missing_names"] + f["missing_numbers"]
                                        for f in sentences)),
        "mean_similarity": float(np.mean([f["similarity"] for f in sentences]))
        if sentences else 1.0,
        # Statements the context holds word for word (a short answer: as written).
        "verbatim_share": sum(1 for s in statements if (wanted := folded(s).strip(" .!?。"))
                              and wanted in evidence.flat) / max(1, len(statements)),
    }


def copied(whole: Mapping[str, float], short: bool) -> bool:
    """Whether every statement of the answer is a sentence the context holds word for
    word: each is then supported by definition (the paper's faithfulness is 1), not by
    a fitted estimate. Not a short answer: a name or number copied from the context may
    still be the answer to another question than the one asked."""
    return not short and whole["verbatim_share"] == 1.0


def with_supports(answer: Mapping[str, float], supports: Sequence[float],
                  within: Sequence[float]) -> dict[str, float]:
    """The answer's evidence, its statements' fitted supports, and the measurements
    that count for answers of few statements only. ``within``: the supports by the
    statement model fitted within each data set, read for answers of many statements
    only (for one, the pooled model reads a wrong number or name better)."""
    support = np.asarray(supports, dtype=np.float64)
    out = {**answer, "mean_support": float(support.mean()),
           "mean_support_within_multi": float(np.mean(within)) * answer["multi"]
           if within else 0.0}
    return out | {f"{name}_single": out[name] * (1.0 - out["multi"]) for name in SINGLE}


def mean(checks: Sequence[Check]) -> float:
    """The mean probability of support, each clamped to [0, 1]."""
    return sum(min(1.0, max(0.0, c.probability)) for c in checks) / len(checks)


def fitted(statements: Sequence[Statement], checks: Sequence[Check],
           whole: Mapping[str, float], models: SupportModels) -> float:
    """The fitted answer model's reading of the built-in checker's supports and the
    answer's evidence as a whole, calibrated toward word overlap."""
    within = [models.statement_within.probability(c.features)
              for s, c in zip(statements, checks, strict=True) if not s.short]
    return models.faithfulness(with_supports(whole, [c.probability for c in checks], within))
