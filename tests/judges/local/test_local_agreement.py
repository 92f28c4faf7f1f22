"""Pairwise agreement of the local judge (the protocol of ``ragas-trace eval``) on the
shared development cases and on cases of our own in other topics and languages."""

import asyncio
import json
from dataclasses import replace
from pathlib import Path

from ragas_trace.cli.eval_cmd import evaluate, load_cases
from ragas_trace.judges.local import LocalJudge

# dev_cases.jsonl: a copy of the project's shared dev-cases.jsonl (16 ordinary, 6 hard),
# kept here so the test runs in a clean checkout.
DEV_CASES = Path(__file__).with_name("dev_cases.jsonl")
EXTRA_CASES = Path(__file__).with_name("extra_cases.jsonl")
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
# What a naive embedding judge reaches on the hard rows (issue 4): we must beat it.
NAIVE_HARD = {"faithfulness": 0.67, "answer_relevance": 0.33, "context_relevance": 0.92}
# Faithfulness is fitted on real labelled answers (RAGTruth, HaluEval), not on these
# hand-written cases: it gives little weight to what only they exhibit (a reversed
# relation, a word put in another's place), and stands at 0.94 ordinary / 0.67 hard
# on the dev cases, 0.92 on our own (the hand-set rules it replaced: 1.00, tuned on
# them). Regression guards at those levels; docs/guides/local-judge.md says why.
FLOOR = {"faithfulness": 0.9, "answer_relevance": 0.95, "context_relevance": 0.95}
HARD_FLOOR = {"faithfulness": 0.6} | {m: NAIVE_HARD[m] + 0.01
                                      for m in ("answer_relevance", "context_relevance")}


def agreement(path: Path, judge: LocalJudge) -> dict[str, dict[str, float]]:
    report = asyncio.run(evaluate(load_cases(path), judge, concurrency=4))
    return {split: {m: r["agreement"] for m, r in metrics.items()}
            for split, metrics in report["splits"].items()}


def test_dev_cases(judge: LocalJudge) -> None:
    splits = agreement(DEV_CASES, judge)
    for metric in METRICS:
        assert splits["all"][metric] >= FLOOR[metric], (metric, splits)
        assert splits["hard"][metric] >= HARD_FLOOR[metric], (metric, splits)


def test_own_cases_in_other_topics_and_languages(judge: LocalJudge) -> None:
    splits = agreement(EXTRA_CASES, judge)
    for metric in METRICS:
        assert splits["all"][metric] >= FLOOR[metric], (metric, splits)


PUBLIC_PAIRS = Path(__file__).parent / "data" / "public_pairs.jsonl"
# Below what the judge reaches (bench/results/local_judge_agreement.json) and above the
# lexical baseline's 0.71 to 0.79 on faithfulness: a regression guard, on the data sets
# it was set for (the French and Spanish ones came later).
PUBLIC_FLOOR = {"faithfulness": 0.80, "answer_relevance": 0.60, "context_relevance": 0.90}
FIRST_SOURCES = ("squad2-", "germanquad-", "cmrc2018-")
# Per kind of wrong answer, every language: where the wrong answer brings in a fact the
# passage lacks (foreign: bare; sentence: in the passage's own sentence) the lexical
# baseline reaches 0.96 to 0.99 (0.976 on all sentence rows), and the judge must not
# fall far behind it (the fitted judge: 0.96 on the sentence rows).
KIND_FLOOR = {"foreign": 0.95, "sentence": 0.95}


def test_public_pairs(judge: LocalJudge) -> None:
    cases = [c for c in load_cases(PUBLIC_PAIRS) if c.split.startswith(FIRST_SOURCES)]
    report = asyncio.run(evaluate(cases, judge, concurrency=4))
    for metric, floor in PUBLIC_FLOOR.items():
        pairs = [r[metric] for r in report["splits"].values()]
        pooled = sum(r["agreement"] * r["pairs"] for r in pairs) / sum(r["pairs"] for r in pairs)
        assert pooled >= floor, (metric, report["splits"])


def test_public_pairs_by_kind_of_wrong_answer(judge: LocalJudge) -> None:
    rows = [json.loads(line) for line in PUBLIC_PAIRS.read_text(encoding="utf-8").splitlines()]
    cases = [replace(case, split=row["kind"])
             for case, row in zip(load_cases(PUBLIC_PAIRS), rows, strict=True)
             if row["kind"] in KIND_FLOOR]
    splits = asyncio.run(evaluate(cases, judge, concurrency=4))["splits"]
    for kind, floor in KIND_FLOOR.items():
        assert splits[kind]["faithfulness"]["agreement"] >= floor, (kind, splits)
