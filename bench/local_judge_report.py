"""The local judge's faithfulness on labelled answers, per data set, beside the
lexical baseline and a length control measured in the same run.

A third of each development set's sources is held out (``judge_data.held_back``,
seeded): the fit and every choice in it never read it; its figures (``holdout``) come
from the models fitted on the rest, as the shipped one is, beside the cross-validated
figures of the rest.

Development sets (RAGTruth summarisation and data-to-text, HaluEval QA, AttributionBench
dev, the public dev pairs) are the ones the support models are fitted on: their judge
figures are cross-validated by source (each answer scored by models fitted on the folds
that do not hold its passage; ``tools/fit_local_judge.py``). Each is also scored by
models fitted without that whole data set (``left out``): how the judge does on a kind
of data it has never seen, as on the held-out sets it is judged by. Held-out sets (the public
held-out pairs, the development-style cases) were never fitted on: they are scored
end to end by the shipped judge.

Per data set: pairwise agreement (a clean answer scores higher than a hallucinated
one to the same question over the same passages; ties count half), AUROC of
1 - faithfulness for "hallucinated", and at the shipped threshold the share of clean
answers that pass and of hallucinated answers that fail, and the expected calibration
error of faithfulness read as the probability that the answer is clean (ten equal-width
bins; the cross-validated scores). Answers the judge leaves
unscored (nothing checkable, e.g. a refusal) count as neither passing nor failing
and are left out of the rankings; their number is reported.

Answer relevance of real answers: AttributionBench dev's whole responses and HaluEval's
right answers to their own question, and to another question of their set, passing
the shipped threshold. And of incomplete answers, as the paper's protocol makes them
(an answer to part of the question): WikiEval's compound questions ("When ..., and
what ...?") with a reference answer of several sentences, the whole answer against
its first sentence alone (constructed, not human-labelled): pairwise agreement and
the share of each passing. The relevance parameters' own fit (``tools/fit_relevance.py``,
recorded in ``data/relevance_model.json``): cross-validated, and the holdout beside
the hand-set values it replaced.

Baselines: ``lexical``, the share of the answer's content words found in the
passages; ``length``, shorter answers score higher (HaluEval is dominated by it).

    python bench/local_judge_report.py [--features /tmp/features.json] [--threads 2]

Reads ``../shared/data`` (or ``$RAGAS_TRACE_SHARED_DATA``); says so and exits 2 when
it is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
from fit_local_judge import (  # noqa: E402
    Measured,
    answer_score,
    cross_validated,
    development_measured,
    fit_models,
    left_out,
    split_holdout,
)
from judge_data import (  # noqa: E402
    Answer,
    attributionbench_responses,
    halueval,
    held_out,
    shared_data,
    words,
)

from ragas_trace.cli.eval_cmd import preference_point  # noqa: E402
from ragas_trace.judges.local import Embedder, LocalJudge  # noqa: E402
from ragas_trace.judges.local.lexicon import STOPWORDS, question_parts  # noqa: E402
from ragas_trace.judges.local.scoring import RELEVANCE_FILE  # noqa: E402
from ragas_trace.judges.local.support_model import load_models  # noqa: E402
from ragas_trace.metrics.sentences import split_sentences  # noqa: E402
from ragas_trace.results import Metric  # noqa: E402
from results_file import write_results  # noqa: E402

Scores = dict[str, float | None]


def lexical(a: Answer) -> float:
    own = {w for w in words(a.answer) if w not in STOPWORDS}
    context = set(words(" ".join(a.contexts)))
    return len(own & context) / len(own) if own else 0.0


def length(a: Answer) -> float:
    return 1.0 / (1.0 + len(words(a.answer)))


def pairwise(answers: Sequence[Answer], scores: Scores) -> tuple[float, int]:
    by_pair: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        if scores[a.id] is not None:
            by_pair[a.pair].append(a)
    points = []
    for members in by_pair.values():
        for good in (a for a in members if not a.hallucinated):
            for bad in (a for a in members if a.hallucinated):
                g, b = scores[good.id], scores[bad.id]
                assert g is not None and b is not None
                points.append(1.0 if g > b else 0.5 if g == b else 0.0)
    return (sum(points) / len(points) if points else float("nan")), len(points)


def auroc(answers: Sequence[Answer], scores: Scores) -> float:
    """The probability that a hallucinated answer scores below a clean one (ties half),
    by ranks."""
    rows = [(s, a.hallucinated) for a in answers if (s := scores[a.id]) is not None]
    bad = sum(1 for _, h in rows if h)
    good = len(rows) - bad
    if not bad or not good:
        return float("nan")
    ordered = sorted(rows, key=lambda r: r[0])
    rank_sum, i = 0.0, 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # ranks i+1..j share their mean
        rank_sum += mid * sum(1 for r in ordered[i:j] if not r[1])
        i = j
    return (rank_sum - good * (good + 1) / 2) / (good * bad)


def at_threshold(answers: Sequence[Answer], scores: Scores, threshold: float
                 ) -> dict[str, float]:
    clean = [scores[a.id] for a in answers if not a.hallucinated]
    bad = [scores[a.id] for a in answers if a.hallucinated]
    return {
        "clean_pass": sum(1 for s in clean if s is not None and s >= threshold)
        / max(1, len(clean)),
        "hallucinated_fail": sum(1 for s in bad if s is not None and s < threshold)
        / max(1, len(bad)),
        "unscored": sum(1 for s in clean + bad if s is None),
    }


def shipped(answers: Sequence[Answer], threads: int) -> Scores:
    judge = LocalJudge(embedder=Embedder(threads=threads, cache_size=50_000))
    judge.load()

    def one(a: Answer) -> float | None:
        result = judge.evaluate_sync(a.question, list(a.contexts), a.answer,
                                     frozenset({Metric.FAITHFULNESS}))
        return result.results[Metric.FAITHFULNESS].value

    with ThreadPoolExecutor(threads) as pool:
        return dict(zip((a.id for a in answers), pool.map(one, answers), strict=True))


def holdout_scored(fitting: Sequence[Measured], holdout: Sequence[Measured]) -> Scores:
    """The holdout's faithfulness from the models fitted on everything else (as the
    shipped model is): the figures no choice of the fit has seen."""
    models = fit_models(fitting)
    return {m.answer.id: answer_score(m, models) for m in holdout}


def calibration_error(answers: Sequence[Answer], scores: Scores, bins: int = 10) -> float:
    """Expected calibration error of the score as P(clean): the answers' share in each
    of ``bins`` equal-width bins times the gap between the bin's mean score and its
    share of clean answers."""
    rows = [(s, 0.0 if a.hallucinated else 1.0) for a in answers
            if (s := scores[a.id]) is not None]
    total = 0.0
    for b in range(bins):
        inside = [(s, y) for s, y in rows
                  if b / bins <= s < (b + 1) / bins or (b == bins - 1 and s == 1.0)]
        if inside:
            gap = abs(sum(s for s, _ in inside) - sum(y for _, y in inside)) / len(inside)
            total += len(inside) / len(rows) * gap
    return total


def speed(answers: Sequence[Answer], threads: int, records: int = 5) -> dict[str, float]:
    """Seconds per record (median) for contexts of 2,000 and 20,000 characters made of
    the development articles, with their own answers."""
    import statistics
    import time

    judge = LocalJudge(embedder=Embedder(threads=threads, cache_size=0))
    judge.load()
    articles = [a for a in answers if a.dataset == "ragtruth-summary"][::6]
    text = " ".join(a.contexts[0] for a in articles)
    out = {}
    for chars in (2_000, 20_000):
        times = []
        for i, a in enumerate(articles[:records]):
            began = time.perf_counter()
            judge.evaluate_sync(a.question, [text[i * 997:i * 997 + chars]], a.answer)
            times.append(time.perf_counter() - began)
        out[str(chars)] = round(statistics.median(times), 3)
    return out


def report_set(answers: Sequence[Answer], judge: Scores, threshold: float,
               unseen: Scores | None = None) -> dict[str, Any]:
    baselines: dict[str, Callable[[Answer], float]] = {"lexical": lexical, "length": length}
    out: dict[str, Any] = {"answers": len(answers),
                           "hallucinated": sum(1 for a in answers if a.hallucinated)}
    for name, scores in [("judge", judge)] + [
            (n, {a.id: f(a) for a in answers}) for n, f in baselines.items()]:
        agreement, pairs = pairwise(answers, scores)
        out[name] = {"pairwise": round(agreement, 4), "pairs": pairs,
                     "auroc": round(auroc(answers, scores), 4)}
    out["judge"] |= {k: round(v, 4) for k, v in at_threshold(answers, judge, threshold).items()}
    out["judge"]["calibration_error"] = round(calibration_error(answers, judge), 4)
    if unseen is not None:
        out["left_out"] = {"pairwise": round(pairwise(answers, unseen)[0], 4),
                           "auroc": round(auroc(answers, unseen), 4)}
    return out


def real_answer_relevance(data: Path, threads: int) -> dict[str, Any]:
    """Answer relevance of real answers to their own question, and of the same answers
    to another question of their set (a control that must fail), with their passages:
    AttributionBench dev's whole responses (one per question) and HaluEval's right
    answers (direct, mostly a span of the passage); share passing the shipped
    threshold, and the median."""
    judge = LocalJudge(embedder=Embedder(threads=threads, cache_size=50_000))
    judge.load()
    threshold = judge.thresholds["answer_relevance"]

    def one(row: tuple[str, tuple[str, ...], str]) -> float | None:
        question, references, response = row
        result = judge.evaluate_sync(question, list(references), response,
                                     frozenset({Metric.ANSWER_RELEVANCE}))
        return result.results[Metric.ANSWER_RELEVANCE].value

    halueval_right = [(a.question, a.contexts, a.answer) for a in halueval(data)
                      if not a.hallucinated]
    out: dict[str, Any] = {"threshold": threshold,
                           "wikieval_incomplete": incomplete_answers(data, one, threshold, threads)}
    for name, rows in (("attributionbench_responses", attributionbench_responses(data)),
                       ("halueval_right", halueval_right)):
        out[name] = {"answers": len(rows)}
        # The other question: half the set away, so never the answer's own.
        for which, shift in (("own_question", 0), ("other_question", len(rows) // 2)):
            pairs = [(rows[(i + shift) % len(rows)][0], references, response)
                     for i, (_, references, response) in enumerate(rows)]
            with ThreadPoolExecutor(threads) as pool:
                values = sorted(v for v in pool.map(one, pairs) if v is not None)
            out[name][which] = {
                "pass": passing(values, threshold),
                "median": round(values[len(values) // 2], 4) if values else None}
    return out


def passing(values: Sequence[float | None], threshold: float) -> float:
    """The share of the scored values at or above ``threshold``."""
    scored = [v for v in values if v is not None]
    return round(sum(1 for v in scored if v >= threshold) / max(1, len(scored)), 4)


def incomplete_answers(data: Path, relevance: Callable[[tuple[str, tuple[str, ...], str]],
                                                       float | None],
                       threshold: float, threads: int) -> dict[str, Any]:
    """WikiEval's compound questions with a reference answer of several sentences:
    the whole answer against its first sentence (which answers a part)."""
    rows = json.loads((data / "wikieval-50.json").read_text(encoding="utf-8"))
    cases = [(str(r["question"]), (str(r["context"]),), sentences)
             for r in rows if question_parts(str(r["question"]))
             and len(sentences := split_sentences(str(r["gt_answer"]))) > 1]
    with ThreadPoolExecutor(threads) as pool:
        whole = list(pool.map(relevance, [(q, c, " ".join(s)) for q, c, s in cases]))
        first = list(pool.map(relevance, [(q, c, s[0]) for q, c, s in cases]))
    return {"questions": len(cases),
            "agreement": round(sum(preference_point(w, f)
                                   for w, f in zip(whole, first, strict=True))
                               / max(1, len(cases)), 4),
            "whole_pass": passing(whole, threshold),
            "first_sentence_pass": passing(first, threshold)}


def verbatim_pass(answers: Sequence[Answer], scores: Scores, threshold: float) -> dict[str, Any]:
    """HaluEval's right answers that are spans of their passage: share passing."""
    spans = [a for a in answers if not a.hallucinated and a.dataset == "halueval"
             and " ".join(words(a.answer)) in " ".join(words(" ".join(a.contexts)))]
    passing = sum(1 for a in spans if (s := scores[a.id]) is not None and s >= threshold)
    return {"answers": len(spans), "pass": round(passing / max(1, len(spans)), 4),
            "reach_half": round(sum(1 for a in spans if (s := scores[a.id]) is not None
                                    and s >= 0.5) / max(1, len(spans)), 4)}


def figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, r in report["sets"].items():
        how = {"held out": "held out, shipped judge",
               "holdout": "holdout sources, fitted without them",
               "development": "cross-validated by source"}[r["part"]]
        j, lex, ln = r["judge"], r["lexical"], r["length"]
        out[f"{name}:pairwise"] = {
            "value": j["pairwise"], "baseline": lex["pairwise"], "length": ln["pairwise"],
            "pairs": j["pairs"],
            "label": f"Local judge faithfulness, {name} ({how}): pairwise agreement",
            "baseline_label": "lexical overlap, same pairs, same run"}
        out[f"{name}:auroc"] = {
            "value": j["auroc"], "baseline": lex["auroc"], "length": ln["auroc"],
            "label": f"Local judge faithfulness, {name} ({how}): AUROC for hallucinated",
            "baseline_label": "lexical overlap, same answers, same run"}
        out[f"{name}:calibration_error"] = {
            "value": j["calibration_error"], "unit": "ECE", "target": "<= 0.10",
            "label": f"{name} ({how}): expected calibration error of faithfulness as "
                     "P(clean), 10 bins"}
        if "left_out" in r:
            out[f"{name}:left_out_auroc"] = {
                "value": r["left_out"]["auroc"], "baseline": lex["auroc"],
                "label": f"Local judge faithfulness, {name}, fitted without this data set: "
                         "AUROC for hallucinated",
                "baseline_label": "lexical overlap, same answers, same run"}
            out[f"{name}:left_out_pairwise"] = {
                "value": r["left_out"]["pairwise"], "baseline": lex["pairwise"],
                "label": f"Local judge faithfulness, {name}, fitted without this data set: "
                         "pairwise agreement",
                "baseline_label": "lexical overlap, same pairs, same run"}
        out[f"{name}:clean_pass"] = {
            "value": j["clean_pass"], "unit": "share",
            "label": f"{name} ({how}): clean answers passing at the shipped threshold "
                     f"{report['threshold']}"}
        out[f"{name}:hallucinated_fail"] = {
            "value": j["hallucinated_fail"], "unit": "share",
            "label": f"{name} ({how}): hallucinated answers failing at the shipped "
                     f"threshold {report['threshold']}"}
    out["calibration_error"] = {
        "value": report["calibration_error"], "unit": "ECE", "target": "<= 0.10",
        "label": "Local judge faithfulness on every development answer outside the holdout "
                 "(cross-validated): expected calibration error as P(clean), 10 bins"}
    out["holdout_calibration_error"] = {
        "value": report["holdout_calibration_error"], "unit": "ECE", "target": "<= 0.10",
        "label": "Local judge faithfulness on the holdout (a third of each development "
                 "set's sources, fitted without them): expected calibration error as "
                 "P(clean), 10 bins"}
    for chars, seconds in report["seconds_per_record"].items():
        out[f"seconds_per_record_{chars}"] = {
            "value": seconds, "unit": "s",
            "label": f"Local judge, all three metrics, {int(chars):,}-character contexts "
                     f"(RAGTruth articles joined), {report['threads']} threads, one record "
                     "at a time (median)"}
    relevance = report["real_answer_relevance"]
    for key, whose in (("attributionbench_responses", "AttributionBench dev's real responses"),
                       ("halueval_right", "HaluEval's right answers")):
        r = relevance[key]
        for name, what in (("own_question", "to their own question"),
                           ("other_question", "to another question of the set (must fail)")):
            out[f"{key}:answer_relevance_pass_{name}"] = {
                "value": r[name]["pass"], "unit": "share",
                "label": f"Answer relevance of {whose} ({r['answers']}) {what}: share "
                         f"passing at the shipped threshold {relevance['threshold']}"}
    w = relevance["wikieval_incomplete"]
    about = (f"WikiEval's compound questions with a reference answer of several sentences "
             f"({w['questions']})")
    out["wikieval:answer_relevance_whole_over_first_sentence"] = {
        "value": w["agreement"], "unit": "agreement",
        "label": f"Answer relevance, {about}: the whole answer above its first sentence "
                 "alone (an incomplete answer; constructed)"}
    for name, what in (("whole", "the whole answer"), ("first_sentence", "its first sentence")):
        out[f"wikieval:answer_relevance_pass_{name}"] = {
            "value": w[f"{name}_pass"], "unit": "share",
            "label": f"Answer relevance, {about}: {what} passing at the shipped threshold "
                     f"{relevance['threshold']}"}
    for metric, fit in report["relevance_fit"].items():
        name = metric.replace("_", " ")
        fitted, hand = fit["fitted"], fit["hand_set"]
        out[f"{metric}:fit_cross_validated_auroc"] = {
            "value": fitted["cross_validated_auroc"], "unit": "AUROC",
            "label": f"{name.capitalize()} parameters fitted on {fit['cases']} labelled "
                     "development pairs (tools/fit_relevance.py): mean AUROC over the sets, "
                     "cross-validated by source"}
        out[f"{metric}:fit_holdout_auroc"] = {
            "value": fitted["holdout_auroc"], "baseline": hand["holdout_auroc"],
            "unit": "AUROC",
            "label": f"{name.capitalize()}, fitted parameters, on the holdout's "
                     f"{fit['holdout_cases']} pairs: mean AUROC over the sets",
            "baseline_label": "the hand-set parameters the fit replaced, same pairs"}
    v = report["halueval_verbatim"]
    out["halueval:verbatim_pass"] = {
        "value": v["pass"], "unit": "share",
        "label": f"HaluEval right answers that are spans of their passage ({v['answers']}), "
                 "passing at the shipped threshold (cross-validated)"}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--features", type=Path,
                        help="cache of the development sets' measured features")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    measured = development_measured(args.features, args.threads)
    data = shared_data()
    if measured is None or data is None:
        return 2
    threshold = load_models().thresholds["faithfulness"]
    measured, holdout = split_holdout(measured)
    dev_answers = [m.answer for m in measured]
    dev_scores = cross_validated(measured)
    unseen_scores = left_out(measured)
    holdout_answers = [m.answer for m in holdout]
    holdout_scores = holdout_scored(measured, holdout)
    report: dict[str, Any] = {}
    held = held_out()
    held_scores = shipped(held, args.threads)
    sets: dict[str, Any] = {}
    for part, answers, scores in (("development", dev_answers, dev_scores),
                                  ("holdout", holdout_answers, holdout_scores),
                                  ("held out", held, held_scores)):
        suffix = " (holdout)" if part == "holdout" else ""
        for name in sorted({a.dataset for a in answers}):
            members = [a for a in answers if a.dataset == name]
            sets[name + suffix] = {"part": part} | report_set(
                members, scores, threshold, unseen_scores if part == "development" else None)
        real = [a for a in answers if a.dataset.startswith("ragtruth")]
        if real:
            sets["ragtruth (both tasks)" + suffix] = {"part": part} | report_set(
                real, scores, threshold)
    report["calibration_error"] = round(calibration_error(dev_answers, dev_scores), 4)
    report["holdout_calibration_error"] = round(
        calibration_error(holdout_answers, holdout_scores), 4)
    report["threads"] = args.threads
    report["seconds_per_record"] = speed(dev_answers, args.threads)
    report |= {"threshold": threshold, "sets": sets,
              "halueval_verbatim": verbatim_pass(dev_answers, dev_scores, threshold),
              "real_answer_relevance": real_answer_relevance(data, args.threads),
              "relevance_fit": json.loads(RELEVANCE_FILE.read_text(encoding="utf-8"))[
                  "figures"]}
    print(json.dumps(report, indent=1))
    if not args.no_write:
        write_results("local_judge_report", figures(report),
                      command="python bench/local_judge_report.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
