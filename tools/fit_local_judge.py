"""Fit the local judge's support models on labelled public data and write
``src/ragas_trace/judges/local/data/support_model.json``.

What is fitted: L2-regularised logistic regressions that turn a statement's
measured evidence (the built-in checker's, ``judges/local/builtin_checker.py``) into the
probability that the context supports it, for sentences of an answer and for
short answers read with their question, the first also fitted with one intercept
per data set (``statement_within``); and one that turns the answer's statements'
supports and its evidence as a whole into its faithfulness, the
probability that the answer holds no unsupported statement (its log-odds moved
toward those of word overlap by ``LEXICAL_WEIGHT``). The faithfulness pass
threshold is chosen on the cross-validated answer scores (the answer and context
relevance thresholds and parameters: ``tools/fit_relevance.py``).

Data (``tools/judge_data.py``): RAGTruth summarisation and data-to-text (statement
labels from the hallucinated spans), AttributionBench dev (claim labels), HaluEval
QA and the public extractive-QA dev pairs (answer labels, used for answers of one
statement). A third of each set's sources is held out
(``judge_data.held_back``): nothing here reads it. Cross-validation (of the rest) is by
source passage (every answer to one passage in one fold), five folds, fold of a
source fixed by a hash of its name: the script, the data and that rule rebuild the
same file.

    python tools/fit_local_judge.py [--features /tmp/features.json] [--threads 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_data import (
    HOLDOUT_SEED,
    HOLDOUT_SHARE,
    Answer,
    development,
    held_back,
    overlaps,
    shared_data,
)

from ragas_trace.judges.local.combine import ANSWER_FEATURES, SINGLE, copied, with_supports
from ragas_trace.judges.local.embedder import Embedder
from ragas_trace.judges.local.features import STATEMENT_FEATURES
from ragas_trace.judges.local.framing import SHORT_FEATURES
from ragas_trace.judges.local.judge import _Record
from ragas_trace.judges.local.support_model import MODEL_FILE, LogisticModel, toward_overlap
from ragas_trace.results import Metric

FOLDS = 5
# On standardised features. With REAL_WEIGHT, chosen among 1 / 10 and 1 / 5 / 10 / 20 / 40
# for the cross-validated ranking of every development set against word overlap
# (--c-grid reports the statement labels' cross-validated log-loss).
L2 = 10.0
# The clean answers of a healthy app must pass: the threshold is the highest at which
# this share of the clean development answers (real LLM answers) still passes.
CLEAN_PASS = 0.88
KINDS = {"statement": STATEMENT_FEATURES, "short": SHORT_FEATURES}
# The sets of real LLM answers: the threshold is chosen on them, and the statement
# model fitted within each set keeps their mean intercept.
REAL_ANSWERS = ("ragtruth", "attributionbench")
# Real LLM answers of several sentences (RAGTruth) weigh this much more in the answer
# model than the other sets' one-sentence answers, whose kind differs from most of an
# app's: at 1, cross-validated, the fit ranks RAGTruth's answers below word overlap
# (AUROC 0.772 against 0.780); at 40 above it on both RAGTruth tasks.
REAL_WEIGHT = 40.0
# How far the answer's faithfulness leans toward word overlap (its log-odds). Among
# weights in steps of 0.05 with a pooled calibration error within 0.10 (0-0.2 today),
# the one at which the thinnest margin by which a set fitted without it ranks above
# word overlap is widest; margins within 0.001 of each other tie, and the smallest
# weight of a tie is taken. At 0.05 the thinnest is HaluEval's, 0.010; at 0.1-0.2 the
# summaries', 0.021 (see docs/methods.md).
LEXICAL_WEIGHT = 0.1


@dataclass
class Measured:
    """An answer, its statements' features and its evidence as a whole."""

    answer: Answer
    statements: list[tuple[str, str, dict[str, float]]]  # (text, kind, features)
    whole: dict[str, float]


def fold_of(group: str) -> int:
    return int(hashlib.sha256(group.encode()).hexdigest(), 16) % FOLDS


def measure(answers: Sequence[Answer], threads: int) -> list[Measured]:
    embedder = Embedder(threads=threads, cache_size=200_000)
    embedder.load()

    def one(a: Answer) -> Measured:
        try:
            record = _Record(embedder, a.question, a.contexts, a.answer,
                             frozenset({Metric.FAITHFULNESS}))
            statements, whole = record.measure()
        except Exception as exc:  # the judge's bug: said, and the answer left unmeasured
            print(f"{a.id}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return Measured(a, [], {})
        return Measured(a, [(m.statement, m.kind, m.features) for m in statements], whole)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(one, answers))


def save(measured: Sequence[Measured], path: Path) -> None:
    path.write_text(json.dumps([{"answer": m.answer.__dict__, "statements": m.statements,
                                 "whole": m.whole} for m in measured]), encoding="utf-8")


def load(path: Path) -> list[Measured]:
    out = []
    for row in json.loads(path.read_text(encoding="utf-8")):
        a = row["answer"]
        a["contexts"], a["spans"] = tuple(a["contexts"]), tuple(a["spans"])
        out.append(Measured(Answer(**a), [tuple(s) for s in row["statements"]],
                            row["whole"]))
    return out


def split_holdout(measured: Sequence[Measured]) -> tuple[list[Measured], list[Measured]]:
    """(what the fit may read, the holdout it never reads): ``judge_data.held_back``."""
    fitting, holdout = [], []
    for m in measured:
        (holdout if held_back(m.answer.dataset, m.answer.group) else fitting).append(m)
    return fitting, holdout


def statement_labels(m: Measured) -> list[int | None]:
    """1: supported, 0: not, None: unknown (left out of the fit)."""
    a = m.answer
    if not a.hallucinated:
        return [1] * len(m.statements)
    if a.spans:
        flags = [any(overlaps(span, text) for span in a.spans) for text, _, _ in m.statements]
        # No statement holds a labelled span (it sat in a dropped sentence, or the
        # span matching missed it): the statements' own labels are unknown.
        return [0 if f else 1 for f in flags] if any(flags) else [None] * len(flags)
    return [0] if len(m.statements) == 1 else [None] * len(m.statements)


# The direction each measurement can only push support in: evidence against (a
# missing name) never raises it, evidence for (the share of words found) never lowers
# it; the fit is bounded so (a weight of the wrong sign would be data too thin, or
# features that overlap, speaking). Others are free.
AGAINST = frozenset({"missing_names", "missing_numbers", "field_conflicts", "missing_facts"})
FOR = frozenset({
    "similarity", "coverage", "verbatim", "frame", "slot", "kind_fit",
    "mean_support_within_multi", "word_overlap", "word_overlap_multi",
    *(f"{name}_single" for name in SINGLE)})


def fit_logistic(x: np.ndarray, y: np.ndarray, names: Sequence[str], l2: float = L2,
                 weights: np.ndarray | None = None, groups: Sequence[str] | None = None,
                 reference: Sequence[str] = ()) -> LogisticModel:
    """L2-regularised logistic regression on standardised features, each weight
    bounded to the sign ``AGAINST`` / ``FOR`` allow (L-BFGS-B).

    With ``groups`` (each row's data set), every group gets its own unpenalised
    intercept, so the weights say what tells the labels apart within a set, not which
    set a row comes from; the model keeps the mean intercept of the ``reference``
    groups (all of them if none is among the groups)."""
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    sets = sorted(set(groups or ()))
    # One indicator per group but the first, whose intercept is the common one.
    indicators = np.zeros((len(y), max(0, len(sets) - 1)))
    for column, name in enumerate(sets[1:]):
        indicators[:, column] = [g == name for g in groups or ()]
    z = np.hstack([(x - mean) / scale, indicators, np.ones((len(y), 1))])
    w = np.ones(len(y)) if weights is None else weights
    penalty = np.zeros(z.shape[1])
    penalty[:len(names)] = l2

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = z @ beta
        # log(1 + e^m) - y m, computed without overflow
        value = float(w @ (np.logaddexp(0.0, margin) - y * margin)
                      + 0.5 * penalty @ (beta * beta))
        p = 1.0 / (1.0 + np.exp(-np.clip(margin, -60, 60)))
        return value, z.T @ (w * (p - y)) + penalty * beta

    bounds = [(None, 0.0) if n in AGAINST else (0.0, None) if n in FOR else (None, None)
              for n in names] + [(None, None)] * (z.shape[1] - len(names))
    fitted = minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B",
                      bounds=bounds, options={"maxiter": 1000})
    beta = fitted.x
    intercept = float(beta[-1])
    if sets:
        effects = dict(zip(sets, [0.0, *beta[len(names):-1]], strict=True))
        chosen = [s for s in sets if s.startswith(tuple(reference))] if reference else []
        intercept += float(np.mean([effects[s] for s in chosen or sets]))
    return LogisticModel(tuple(names), mean, scale, beta[:len(names)], intercept)


def training_rows(measured: Sequence[Measured], kind: str
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Features, labels, weights and data sets of one kind's statements. Each answer
    weighs 1 in all, shared among its labelled statements, so that long answers do not
    drown short ones, and each data set weighs alike."""
    names = KINDS[kind]
    rows, labels, weights, sets = [], [], [], []
    for m in measured:
        known = [(f, y) for (_, k, f), y in zip(m.statements, statement_labels(m), strict=True)
                 if k == kind and y is not None]
        for f, y in known:
            rows.append([f[n] for n in names])
            labels.append(y)
            weights.append(1.0 / len(known))
            sets.append(m.answer.dataset)
    if not rows:
        return np.zeros((0, len(names))), np.zeros(0), np.zeros(0), []
    w = np.asarray(weights)
    totals = {s: sum(wi for wi, si in zip(w, sets, strict=True) if si == s) for s in set(sets)}
    w = w * np.asarray([len(w) / (len(totals) * totals[s]) for s in sets])
    return np.asarray(rows, dtype=np.float64), np.asarray(labels, dtype=np.float64), w, sets


def dataset_weights(measured: Sequence[Measured]) -> np.ndarray:
    """Each data set weighs alike in all."""
    sets = [m.answer.dataset for m in measured]
    counts = {s: sets.count(s) for s in set(sets)}
    return np.asarray([len(sets) / (len(counts) * counts[s]) for s in sets])


def supports(m: Measured, models: dict[str, LogisticModel]) -> list[float]:
    return [models[k].probability(f) for _, k, f in m.statements]


def answer_values(m: Measured, models: dict[str, LogisticModel]) -> dict[str, float]:
    within = [models["statement_within"].probability(f) for _, k, f in m.statements
              if k == "statement"]
    return with_supports(m.whole, supports(m, models), within)


def fit_models(measured: Sequence[Measured], l2: float = L2, extra: Sequence[str] = ()
               ) -> dict[str, LogisticModel]:
    """The statement and short-answer models on statement labels, then the answer
    model on answer labels, reading the supports the first two give. ``extra``: more
    answer features, already in each ``whole`` (an experiment's, such as the
    cross-encoder's in ``train_cross_encoder.py``)."""
    models = {}
    for kind, names in KINDS.items():
        x, y, w, sets = training_rows(measured, kind)
        models[kind] = fit_logistic(x, y, names, l2, w)
        if kind == "statement":
            # Fitted pooled, the model also learns which set a statement comes from
            # (most of HaluEval's sentences are unsupported, most of RAGTruth's
            # supported) and ranks statements within a set below some single
            # features; with one intercept per set it reads what tells them apart
            # within a set. Read for answers of many statements (``with_supports``).
            models["statement_within"] = fit_logistic(x, y, names, l2, w, groups=sets,
                                                      reference=REAL_ANSWERS)
    scored = [m for m in measured if m.statements]
    names = (*ANSWER_FEATURES, *extra)
    values = [answer_values(m, models) for m in scored]
    x = np.asarray([[v[n] for n in names] for v in values])
    y = np.asarray([0.0 if m.answer.hallucinated else 1.0 for m in scored])
    weights = dataset_weights(scored) * np.asarray(
        [REAL_WEIGHT if m.answer.dataset.startswith("ragtruth") else 1.0 for m in scored])
    models["answer"] = fit_logistic(x, y, names, l2, weights)
    return models


def answer_score(m: Measured, models: dict[str, LogisticModel]) -> float | None:
    """The answer model's reading of its statements' supports and its evidence as a
    whole; None for an answer with nothing to check."""
    if not m.statements:
        return None
    if copied(m.whole, m.statements[0][1] == "short"):
        return 1.0
    values = answer_values(m, models)
    return toward_overlap(models["answer"].probability(values), values["word_overlap"],
                          LEXICAL_WEIGHT)


def cross_validated(measured: Sequence[Measured], l2: float = L2,
                    fit: Callable[..., dict[str, LogisticModel]] = fit_models
                    ) -> dict[str, float | None]:
    """Each answer's faithfulness from the models fitted on the other folds."""
    scores: dict[str, float | None] = {}
    for fold in range(FOLDS):
        train = [m for m in measured if fold_of(m.answer.group) != fold]
        models = fit(train, l2)
        for m in measured:
            if fold_of(m.answer.group) == fold:
                scores[m.answer.id] = answer_score(m, models)
    return scores


def left_out(measured: Sequence[Measured], l2: float = L2) -> dict[str, float | None]:
    """Each answer's faithfulness from the models fitted on every other data set: how
    the judge does on a kind of data it has never seen."""
    scores: dict[str, float | None] = {}
    for name in sorted({m.answer.dataset for m in measured}):
        models = fit_models([m for m in measured if m.answer.dataset != name], l2)
        for m in measured:
            if m.answer.dataset == name:
                scores[m.answer.id] = answer_score(m, models)
    return scores


def choose_threshold(answers: Sequence[Answer], scores: dict[str, float | None]) -> float:
    """The highest threshold (in steps of 0.01) at which ``CLEAN_PASS`` of the clean
    real-LLM development answers (RAGTruth's, AttributionBench's claims) pass."""
    clean = sorted(s for a in answers if not a.hallucinated and a.dataset.startswith(REAL_ANSWERS)
                   and (s := scores[a.id]) is not None)
    index = int(np.floor((1.0 - CLEAN_PASS) * len(clean)))
    return float(np.floor(clean[index] * 100) / 100)


def log_loss(measured: Sequence[Measured], l2: float) -> float:
    """Cross-validated log-loss of the statement labels."""
    total, count = 0.0, 0
    for fold in range(FOLDS):
        models = fit_models([m for m in measured if fold_of(m.answer.group) != fold], l2)
        for m in measured:
            if fold_of(m.answer.group) != fold:
                continue
            for (_, k, f), y in zip(m.statements, statement_labels(m), strict=True):
                if y is not None:
                    p = min(1 - 1e-6, max(1e-6, models[k].probability(f)))
                    total -= y * np.log(p) + (1 - y) * np.log(1 - p)
                    count += 1
    return total / max(1, count)


def development_measured(cache: Path | None, threads: int) -> list[Measured] | None:
    """The development sets' measured features: read from ``cache`` when it exists,
    else measured (and written there); None, said on stderr, without the shared data."""
    if cache is not None and cache.exists():
        return load(cache)
    data = shared_data()
    if data is None:
        print("no ../shared/data beside this checkout (set $RAGAS_TRACE_SHARED_DATA): "
              "nothing to measure", file=sys.stderr)
        return None
    measured = measure(development(data), threads)
    if cache is not None:
        save(measured, cache)
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--features", type=Path,
                        help="cache of measured features: read if present, else written")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--c-grid", action="store_true",
                        help="report the cross-validated log-loss for several L2 strengths")
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    args = parser.parse_args()
    everything = development_measured(args.features, args.threads)
    if everything is None:
        return 2
    measured, holdout = split_holdout(everything)
    if args.c_grid:
        for l2 in (0.1, 0.3, 1.0, 3.0, 10.0, 30.0):
            print(f"L2 {l2}: cross-validated log-loss {log_loss(measured, l2):.4f}")
    scores = cross_validated(measured)
    answers = [m.answer for m in measured]
    threshold = choose_threshold(answers, scores)
    models = fit_models(measured)
    counts = {kind: len(training_rows(measured, kind)[1]) for kind in KINDS}
    document: dict[str, Any] = {
        "about": "Fitted by tools/fit_local_judge.py; see docs/guides/local-judge.md.",
        "data": sorted({a.dataset for a in answers}),
        "answers": len(answers),
        "holdout": {"seed": HOLDOUT_SEED, "share": f"1 source in {HOLDOUT_SHARE}",
                    "answers": len(holdout), "read": False},
        "statements": counts,
        "folds": FOLDS, "l2": L2, "clean_pass": CLEAN_PASS, "real_weight": REAL_WEIGHT,
        "lexical_weight": LEXICAL_WEIGHT,
        "statement": models["statement"].to_json(),
        "short": models["short"].to_json(),
        "statement_within": models["statement_within"].to_json(),
        "answer": models["answer"].to_json(),
        "thresholds": {"faithfulness": threshold},
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: thresholds {document['thresholds']}, statements {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
