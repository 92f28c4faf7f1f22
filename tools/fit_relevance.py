"""Fit the local judge's answer and context relevance parameters (the ramps and
discounts of ``judges/local/scoring.py``) and their pass thresholds on labelled
development data outside the holdout, and write ``data/relevance_model.json``.

Labelled pairs (each: a better and a worse case for the same question):

- answer relevance: the public dev pairs' right answer against an answer to another
  question on the same passage; HaluEval's right answers and AttributionBench dev's
  whole responses to their own question against another question of their set (half
  the set away, so never their own); WikiEval's compound questions ("When ..., and
  what ...?") with a reference answer of several sentences, the whole answer against
  its first sentence, which answers one part (the paper: answer relevance
  "penalises incomplete answers");
- context relevance: the public dev pair's passage against the same passage padded
  with sentences the question does not need.

Each case is read once (embeddings, tokens: ``answer_features`` and ``bearings``);
the parameters are then chosen on a grid by the mean AUROC over the sets (worse case
as negative), cross-validated by source (five folds: chosen on four, measured on the
fifth), and finally chosen on all of it. The holdout (``judge_data.held_back``) is
measured, never chosen on; the hand-set values this replaced are measured beside
them. Thresholds: ``balanced_threshold`` on the fitted values, of every set but
WikiEval's (an incomplete answer is a lower score, not a fail).

    python tools/fit_relevance.py [--threads 2] [--no-write]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from fit_local_judge import FOLDS, fold_of
from judge_data import (
    PUBLIC_PAIRS,
    attributionbench_responses,
    halueval,
    held_back,
    public_group,
    shared_data,
)

from ragas_trace.judges.local import LocalJudge, scoring
from ragas_trace.judges.local import judge as judge_module
from ragas_trace.judges.local.embedder import Embedder
from ragas_trace.judges.local.lexicon import question_parts
from ragas_trace.judges.local.scoring import (
    AnswerFeatures,
    AnswerParameters,
    Bearing,
    ContextParameters,
    answer_value,
    needs_of,
)
from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.results import Metric

# The values set by hand before this fit (measured beside it in the file's figures).
# The fit also set a factor per placeholder word ("someone") to 1, no effect: that
# rule is gone.
HAND_SET = (AnswerParameters(0.20, 0.70, 0.5, 0.5, 0.20, 0.50),
            ContextParameters(0.30, 0.60, 0.2, 0.15, 0.30, 0.10))
ANSWER_GRID = {"floor": (0.0, 0.1, 0.2, 0.3), "full": (0.5, 0.6, 0.7, 0.8),
               "informative_share": (0.25, 0.5, 0.75),
               "unmet_factor": (0.2, 0.35, 0.5, 0.7), "part_floor": (0.1, 0.2, 0.3),
               "part_full": (0.4, 0.5, 0.6)}
CONTEXT_GRID = {"need_floor": (0.2, 0.3, 0.4), "need_full": (0.5, 0.6, 0.7),
                "lexical_weight": (0.0, 0.1, 0.2, 0.3, 0.4),
                "lacks_expected_penalty": (0.0, 0.15, 0.3),
                "relative_floor": (0.2, 0.3, 0.4), "relative_full": (0.0, 0.05, 0.1)}


@dataclass(frozen=True)
class Case:
    """One labelled pair: the better and the worse reading of one question, by source."""

    kind: str  # the set it belongs to
    group: str  # its source: folds and the holdout go by it
    holdout: bool
    good: Any  # AnswerFeatures, or (bearings, sentences)
    poor: Any


def balanced_threshold(*sets: tuple[Sequence[float], Sequence[float]]) -> float:
    """The threshold (in steps of 0.01) that best separates each set's ``good`` (pass at
    or above) from its ``bad``: the highest mean, over the sets, of the two shares
    labelled right; the lowest such threshold on a tie, so that good answers keep
    passing."""
    best, chosen = -1.0, 0.5
    for step in range(1, 100):
        t = step / 100
        accuracy = sum((sum(1 for g in good if g >= t) / len(good)
                        + sum(1 for b in bad if b < t) / len(bad)) / 2
                       for good, bad in sets) / len(sets)
        if accuracy > best:
            best, chosen = accuracy, t
    return chosen


class Reader:
    """Runs the shipped judge on a case and keeps what relevance read of it."""

    def __init__(self, threads: int) -> None:
        self.judge = LocalJudge(embedder=Embedder(threads=threads, cache_size=50_000))
        self.judge.load()

    def answer(self, question: str, answer: str) -> AnswerFeatures | None:
        kept: list[AnswerFeatures] = []
        original = judge_module.answer_relevance

        def reading(*args: Any) -> tuple[float, str]:
            kept.append(scoring.answer_features(*args))
            return original(*args)

        judge_module.answer_relevance = reading  # type: ignore[assignment]
        try:
            self.judge.evaluate_sync(question, [], answer,
                                     frozenset({Metric.ANSWER_RELEVANCE}))
        finally:
            judge_module.answer_relevance = original
        return kept[0] if kept else None

    def context(self, question: str, context: str) -> tuple[list[Bearing], int] | None:
        kept: list[tuple[list[Bearing], int]] = []
        original = judge_module.sentence_need

        def reading(questions: Any, evidence: Any, vectors: Any, rarity: Any) -> list[float]:
            # The value divides by every sentence of the record's context, also those
            # outside the question's window: the caller's record holds them.
            record = sys._getframe(1).f_locals["self"]
            kept.append((scoring.bearings(questions, evidence, vectors, rarity),
                         len(record.evidence.sentences)))
            return original(questions, evidence, vectors, rarity)

        judge_module.sentence_need = reading  # type: ignore[assignment]
        try:
            result = self.judge.evaluate_sync(question, [context], "",
                                              frozenset({Metric.CONTEXT_RELEVANCE}))
        finally:
            judge_module.sentence_need = original
        if not kept or result.results[Metric.CONTEXT_RELEVANCE].value is None:
            return None
        return kept[0]


def read_cases(data: Path, threads: int) -> tuple[list[Case], list[Case]]:
    """(answer relevance cases, context relevance cases). The reader wraps module
    functions, so cases are read one at a time."""
    reader = Reader(threads)
    answer_cases: list[Case] = []
    context_cases: list[Case] = []
    for line in PUBLIC_PAIRS.read_text(encoding="utf-8").splitlines():
        if not line.strip() or not (row := json.loads(line))["split"].endswith("/dev"):
            continue
        group = public_group(row["split"].split("/")[0], str(row["id"]))
        holdout = held_back("public-dev", group)
        good, poor = reader.answer(row["question"], row["answer"]), \
            reader.answer(row["question"], row["poor_answer"])
        if good is not None and poor is not None:
            answer_cases.append(Case("public-dev", group, holdout, good, poor))
        full, padded = reader.context(row["question"], row["context"]), \
            reader.context(row["question"], row["context_padded"])
        if full is not None and padded is not None:
            context_cases.append(Case("public-dev", group, holdout, full, padded))
    own: list[tuple[str, str, str, bool]] = [
        (a.group, a.question, a.answer, held_back(a.dataset, a.group))
        for a in halueval(data) if not a.hallucinated]
    sets = [("halueval", own),
            ("attributionbench", [(f"ab-{q}", q, response, held_back("attributionbench", f"ab-{q}"))
                                  for q, _, response in attributionbench_responses(data)])]
    wikieval = json.loads((data / "wikieval-50.json").read_text(encoding="utf-8"))
    for row in wikieval:
        question = str(row["question"])
        sentences = split_sentences(str(row["gt_answer"]))
        if not question_parts(question) or len(sentences) < 2:
            continue
        good, poor = reader.answer(question, " ".join(sentences)), \
            reader.answer(question, sentences[0])
        if good is not None and poor is not None:
            answer_cases.append(Case("wikieval", question, held_back("wikieval", question),
                                     good, poor))
    for kind, rows in sets:
        for i, (group, question, answer, holdout) in enumerate(rows):
            other = rows[(i + len(rows) // 2) % len(rows)][1]
            good, poor = reader.answer(question, answer), reader.answer(other, answer)
            if good is not None and poor is not None:
                answer_cases.append(Case(kind, group, holdout, good, poor))
    return answer_cases, context_cases


def _auroc(good: np.ndarray, poor: np.ndarray) -> float:
    """P(good > poor) over every pair of the set, ties half."""
    if not len(good) or not len(poor):
        return float("nan")
    values = np.concatenate([good, poor])
    order = values.argsort(kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    # Average ranks of ties.
    _, first, counts = np.unique(sorted_values, return_index=True, return_counts=True)
    average = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(average, counts)
    u = ranks[:len(good)].sum() - len(good) * (len(good) + 1) / 2.0
    return float(u / (len(good) * len(poor)))


Value = Callable[[Any, Any], float]


def answer_of(f: AnswerFeatures, p: AnswerParameters) -> float:
    return min(1.0, max(0.0, answer_value(f, p)))


def context_of(case: tuple[list[Bearing], int], p: ContextParameters) -> float:
    bearings, sentences = case
    window = len(bearings[0].similarity) if bearings else 0
    return sum(needs_of(bearings, window, p)) / max(1, sentences)


def score(cases: Sequence[Case], value: Value, p: Any) -> float:
    """Mean AUROC over the sets of ``cases``."""
    kinds = sorted({c.kind for c in cases})
    out = []
    for kind in kinds:
        mine = [c for c in cases if c.kind == kind]
        out.append(_auroc(np.array([value(c.good, p) for c in mine]),
                          np.array([value(c.poor, p) for c in mine])))
    return float(np.mean(out))


def grid(kind: type, axes: dict[str, tuple[float, ...]]) -> list[Any]:
    """Every combination whose ramps rise (a ramp's low end below its high end)."""
    names = [f.name for f in fields(kind)]
    combos = [kind(**dict(zip(names, combo, strict=True)))
              for combo in itertools.product(*(axes[n] for n in names))]
    return [p for p in combos if _rising(p)]


def _rising(p: Any) -> bool:
    if isinstance(p, AnswerParameters):
        return p.floor < p.full and p.part_floor < p.part_full
    assert isinstance(p, ContextParameters)
    return p.need_floor < p.need_full and p.relative_floor > p.relative_full


def choose(cases: Sequence[Case], value: Value, candidates: Sequence[Any],
           hand_set: Any) -> Any:
    """The best candidate by mean AUROC; the hand-set values win a tie, then the
    earliest candidate (fewer steps from the grid's low corner)."""
    best, chosen = score(cases, value, hand_set), hand_set
    for p in candidates:
        s = score(cases, value, p)
        if s > best + 1e-9:
            best, chosen = s, p
    return chosen


def cross_validated(cases: Sequence[Case], value: Value, candidates: Sequence[Any],
                    hand_set: Any) -> float:
    """Each fold's cases scored with the parameters chosen on the other folds; the mean
    AUROC over the sets of all cases so scored."""
    scored: list[tuple[Case, float, float]] = []
    for fold in range(FOLDS):
        train = [c for c in cases if fold_of(c.group) != fold]
        test = [c for c in cases if fold_of(c.group) == fold]
        p = choose(train, value, candidates, hand_set)
        scored += [(c, value(c.good, p), value(c.poor, p)) for c in test]
    kinds = sorted({c.kind for c, _, _ in scored})
    return float(np.mean([_auroc(np.array([g for c, g, _ in scored if c.kind == k]),
                                 np.array([b for c, _, b in scored if c.kind == k]))
                          for k in kinds]))


# Sets whose worse case is a graded one (a part of the answer), not a fail: they
# choose the parameters, not where pass ends.
NOT_FOR_THRESHOLD = ("wikieval",)


def threshold(cases: Sequence[Case], value: Value, p: Any) -> float:
    """Where pass begins: the best balance of right answers passing and answers to
    another question (or padded passages) failing."""
    kinds = sorted({c.kind for c in cases} - set(NOT_FOR_THRESHOLD))
    return balanced_threshold(*[([value(c.good, p) for c in cases if c.kind == k],
                                 [value(c.poor, p) for c in cases if c.kind == k])
                                for k in kinds])


def at_threshold(cases: Sequence[Case], value: Value, p: Any, t: float
                 ) -> dict[str, dict[str, float]]:
    """Per set: share of good cases passing and of poor ones failing at ``t``."""
    out = {}
    for kind in sorted({c.kind for c in cases}):
        mine = [c for c in cases if c.kind == kind]
        out[kind] = {"cases": len(mine),
                     "good_pass": round(sum(value(c.good, p) >= t for c in mine) / len(mine), 4),
                     "poor_fail": round(sum(value(c.poor, p) < t for c in mine) / len(mine), 4),
                     "auroc": round(score(mine, value, p), 4)}
    return out


def fit(cases: Sequence[Case], value: Value, candidates: Sequence[Any], hand_set: Any
        ) -> tuple[Any, float, dict[str, Any]]:
    fitting = [c for c in cases if not c.holdout]
    holdout = [c for c in cases if c.holdout]
    chosen = choose(fitting, value, candidates, hand_set)
    t = threshold(fitting, value, chosen)
    t_hand = threshold(fitting, value, hand_set)
    figures = {
        "cases": len(fitting), "holdout_cases": len(holdout), "grid": len(candidates),
        "fitted": {"cross_validated_auroc": round(cross_validated(fitting, value, candidates,
                                                                  hand_set), 4),
                   "holdout_auroc": round(score(holdout, value, chosen), 4),
                   "threshold": t, "holdout": at_threshold(holdout, value, chosen, t)},
        "hand_set": {"auroc": round(score(fitting, value, hand_set), 4),
                     "holdout_auroc": round(score(holdout, value, hand_set), 4),
                     "threshold": t_hand,
                     "holdout": at_threshold(holdout, value, hand_set, t_hand)}}
    return chosen, t, figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("no shared data (../shared/data or $RAGAS_TRACE_SHARED_DATA)", file=sys.stderr)
        return 2
    answer_cases, context_cases = read_cases(data, args.threads)
    answer, answer_t, answer_figures = fit(
        answer_cases, answer_of, grid(AnswerParameters, ANSWER_GRID), HAND_SET[0])
    context, context_t, context_figures = fit(
        context_cases, context_of, grid(ContextParameters, CONTEXT_GRID), HAND_SET[1])
    document = {
        "about": "Answer and context relevance parameters and pass thresholds, chosen on "
                 "labelled development pairs outside the holdout by tools/fit_relevance.py "
                 "(its docstring says which); figures: cross-validated by source, and the "
                 "holdout beside the hand-set values this fit replaced.",
        "answer": asdict(answer), "context": asdict(context),
        "thresholds": {"answer_relevance": answer_t, "context_relevance": context_t},
        "figures": {"answer_relevance": answer_figures,
                    "context_relevance": context_figures}}
    text = json.dumps(document, indent=1) + "\n"
    print(text)
    if not args.no_write:
        scoring.RELEVANCE_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
