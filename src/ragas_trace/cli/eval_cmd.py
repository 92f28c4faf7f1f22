"""``ragas-trace eval``: pairwise agreement of a judge with known preferences, the
way section 5 of the paper measures it. Each row of ``--dataset`` gives three
pairs: faithfulness(answer) > faithfulness(ungrounded_answer),
answer_relevance(answer) > answer_relevance(poor_answer), and
context_relevance(context) > context_relevance(context_padded). A tie counts 0.5,
a pair with a failed or missing score 0. Rows are grouped by their ``split`` key
("all" when absent).

A clone of the repository has such a file: tests/judges/local/dev_cases.jsonl
(22 rows: 16 ordinary, 6 in the "hard" split), the project's development cases; it is
not installed with the package."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragas_trace.cli import extras
from ragas_trace.cli._batch import (
    InputError,
    Progress,
    cli_judge,
    in_order,
    positive_int,
    read_jsonl,
    text_field_problems,
)
from ragas_trace.judges.base import Judge
from ragas_trace.results import Metric

_FIELDS = ("question", "context", "context_padded", "answer", "ungrounded_answer",
           "poor_answer")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval", help="measure a judge's pairwise agreement on a labelled data set",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, required=True, metavar="FILE.jsonl",
                        help="JSON lines, one row a line with " + ", ".join(_FIELDS)
                             + " and an optional split (e.g. "
                               "tests/judges/local/dev_cases.jsonl in a clone)")
    parser.add_argument("--judge", default="local", metavar="local|openai",
                        help="local (default), openai or openai:MODEL (endpoint and key from "
                             "OPENAI_BASE_URL / OPENAI_API_KEY)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--concurrency", type=positive_int, default=4, metavar="N",
                        help="records judged at once (default 4)")
    parser.set_defaults(func=run)


@dataclass(frozen=True)
class Case:
    split: str
    fields: dict[str, str]


@dataclass(frozen=True)
class Outcome:
    split: str
    points: dict[Metric, float]  # 1 agree, 0.5 tie, 0 disagree or failed
    failed: bool


def run(args: argparse.Namespace) -> int:
    if not extras.require("eval", extras.judge_extras(args.judge)):
        return extras.EXIT_MISSING_EXTRA
    try:
        cases = load_cases(args.dataset)
        judge = cli_judge(args.judge)
    except (InputError, ValueError, ImportError) as exc:  # InputError names file and line
        print(f"ragas-trace eval: {exc}", file=sys.stderr)
        return 2
    report = asyncio.run(evaluate(cases, judge, args.concurrency))
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(render(report))
    return 0


def load_cases(path: Path) -> list[Case]:
    cases = []
    for number, row in read_jsonl(path, "--dataset"):
        problems = text_field_problems(row, _FIELDS)
        if problems:
            raise InputError(f"{path}:{number}: {'; '.join(problems)}")
        split = row.get("split")
        cases.append(Case(split if isinstance(split, str) and split else "all",
                          {f: row[f] for f in _FIELDS}))
    return cases


async def evaluate(cases: list[Case], judge: Judge, concurrency: int) -> dict[str, Any]:
    progress = Progress("eval: rows", len(cases), flag="with a score missing")
    totals: dict[str, dict[Metric, list[float]]] = defaultdict(lambda: defaultdict(list))
    try:
        async for outcome in in_order((_judge_case(judge, c) for c in cases), concurrency):
            for metric, point in outcome.points.items():
                totals[outcome.split][metric].append(point)
            progress.advance(outcome.failed)
    finally:
        progress.close()
        await judge.aclose()
    return {"judge": judge.name, "splits": {
        split: {str(m): {"agreement": round(sum(p) / len(p), 4), "pairs": len(p)}
                for m in Metric if (p := metrics.get(m))}
        for split, metrics in sorted(totals.items())}}


async def _judge_case(judge: Judge, case: Case) -> Outcome:
    f = case.fields
    q, context = f["question"], [f["context"]]
    good, ungrounded, poor, padded = await asyncio.gather(
        judge.evaluate(q, context, f["answer"]),
        judge.evaluate(q, context, f["ungrounded_answer"], frozenset({Metric.FAITHFULNESS})),
        judge.evaluate(q, context, f["poor_answer"], frozenset({Metric.ANSWER_RELEVANCE})),
        judge.evaluate(q, [f["context_padded"]], f["answer"],
                       frozenset({Metric.CONTEXT_RELEVANCE})),
    )
    pairs = {Metric.FAITHFULNESS: (good, ungrounded), Metric.ANSWER_RELEVANCE: (good, poor),
             Metric.CONTEXT_RELEVANCE: (good, padded)}
    points = {m: preference_point(better.result(m).value, worse.result(m).value)
              for m, (better, worse) in pairs.items()}
    failed = any(s.result(m).value is None for m, pair in pairs.items() for s in pair)
    return Outcome(case.split, points, failed)


def preference_point(better: float | None, worse: float | None) -> float:
    """1 when the judge prefers what it should, 0.5 on a tie, 0 otherwise or when
    either score is missing."""
    if better is None or worse is None:
        return 0.0
    if better > worse:
        return 1.0
    return 0.5 if better == worse else 0.0


def render(report: dict[str, Any]) -> str:
    metrics = [str(m) for m in Metric]
    lines = [f"judge: {report['judge']}",
             f"{'split':<12}" + "".join(f"{m:>20}" for m in metrics)]
    for split, results in report["splits"].items():
        cells = [f"{results[m]['agreement']:.3f} ({results[m]['pairs']})" if m in results
                 else "-" for m in metrics]
        lines.append(f"{split:<12}" + "".join(f"{c:>20}" for c in cells))
    return "\n".join(lines)


