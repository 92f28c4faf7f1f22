"""``ragas-trace score``: batch scoring of saved records. Each input line is a record
(``question``, ``contexts`` as strings or objects with ``content``, ``answer``; the
format ``RagRecord.to_dict`` writes); each output line is that record with its
scores under ``"ragas"`` (``Scores.to_dict``), in input order. A bad line is reported
on stderr and skipped, and the exit code is then 1."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ragas_trace.cli._batch import (
    InputError,
    Progress,
    count_lines,
    in_order,
    positive_int,
    read_jsonl,
)
from ragas_trace.judges.base import Judge
from ragas_trace.record import RagRecord
from ragas_trace.results import Metric, MetricStatus, Scores

_FAILURES = (MetricStatus.FAILED, MetricStatus.TIMEOUT)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "score", help="score saved records (JSON lines) with a judge",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, required=True, metavar="records.jsonl")
    parser.add_argument("--output", type=Path, required=True, metavar="scored.jsonl",
                        help="'-' for standard output")
    parser.add_argument("--judge", default="local", metavar="local|openai",
                        help="local (default), openai or openai:MODEL")
    parser.add_argument("--metrics", default=None, metavar="M1,M2",
                        help="subset of " + ",".join(str(m) for m in Metric))
    parser.add_argument("--concurrency", type=positive_int, default=4, metavar="N",
                        help="records judged at once (default 4)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragas_trace.judges import resolve_judge

    try:
        metrics = frozenset(Metric(m.strip()) for m in args.metrics.split(",")) \
            if args.metrics else frozenset(Metric)
        total = count_lines(args.input)
        judge = resolve_judge(args.judge)
    except (OSError, ValueError, ImportError) as exc:
        print(f"ragas-trace score: {exc}", file=sys.stderr)
        return 2
    try:
        if str(args.output) == "-":
            bad = asyncio.run(score_file(args.input, sys.stdout, judge, metrics, total,
                                         args.concurrency))
        else:
            with args.output.open("w", encoding="utf-8") as out:
                bad = asyncio.run(score_file(args.input, out, judge, metrics, total,
                                             args.concurrency))
    except (OSError, InputError) as exc:
        print(f"ragas-trace score: {exc}", file=sys.stderr)
        return 2
    return 1 if bad else 0


async def score_file(path: Path, out: IO[str], judge: Judge, metrics: frozenset[Metric],
                     total: int, concurrency: int) -> int:
    """Score every record of ``path`` into ``out``; returns the number of bad lines."""
    progress = Progress("score: records", total)
    bad = 0

    def records() -> Iterator[tuple[int, RagRecord | str]]:
        nonlocal bad
        for number, row in read_jsonl(path):
            try:
                yield number, RagRecord.from_dict(row)
            except ValueError as exc:
                bad += 1
                yield number, f"{path}:{number}: {exc}"

    async def job(item: tuple[int, RagRecord | str]) -> tuple[RagRecord | str, Scores | None]:
        record = item[1]
        if isinstance(record, str):
            return record, None
        return record, await judge.evaluate(record.question, record.context_texts,
                                            record.answer, metrics)

    try:
        async for record, scores in in_order((job(item) for item in records()), concurrency):
            if isinstance(record, str) or scores is None:
                print(f"ragas-trace score: skipped {record}", file=sys.stderr)
                progress.advance(failed=True)
                continue
            out.write(json.dumps({**record.to_dict(), "ragas": scores.to_dict()},
                                 ensure_ascii=False) + "\n")
            progress.advance(failed=any(scores.result(m).status in _FAILURES for m in metrics))
    finally:
        progress.close()
        await judge.aclose()
    return bad

