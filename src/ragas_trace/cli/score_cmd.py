"""``ragas-trace score``: batch scoring of saved records. Each input line is a record
(``question``, ``contexts`` as strings or objects with ``content``, ``answer``; the
format ``RagRecord.to_dict`` writes); each output line is that record with its
scores under ``"ragas"`` (``Scores.to_dict``), in input order.

A bad line (not JSON, no ``question`` or ``answer`` string, a field of the wrong
type) is reported on stderr with its line number and skipped; the run goes on.
The output file is written atomically (a temporary file in its directory, renamed
at the end): an interrupted or failed run leaves an existing output as it was. The
output may not be the input file (also through a symlink or another path to it).

exit codes:
  0  every record scored (a metric may still have failed: see "ragas" in each line)
  1  some lines were skipped (the others are written), or the input has no
     records (nothing is written)
  2  bad arguments, the output is the input, or a file could not be read/written"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ragas_trace.cli import extras
from ragas_trace.cli._batch import (
    InputError,
    Progress,
    count_lines,
    in_order,
    jsonl_rows,
    missing_text_fields,
    positive_int,
)
from ragas_trace.cli.safe_output import atomic_output, same_file
from ragas_trace.judges.base import Judge
from ragas_trace.record import RagRecord
from ragas_trace.results import Metric, MetricStatus, Scores

_FAILURES = (MetricStatus.FAILED, MetricStatus.TIMEOUT)
_NEEDED = ("question", "answer")


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "score", help="score saved records (JSON lines) with a judge",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, required=True, metavar="records.jsonl",
                        help="the records to score, one JSON object a line: question, "
                             "contexts (strings or objects with content), answer")
    parser.add_argument("--output", type=Path, required=True, metavar="scored.jsonl",
                        help="where the scored records go, one a line in input order, "
                             "written atomically; '-' for standard output; never the "
                             "input file")
    parser.add_argument("--judge", default="local", metavar="local|openai",
                        help="local (default), openai or openai:MODEL")
    parser.add_argument("--metrics", default=None, metavar="M1,M2",
                        help="subset of " + ",".join(str(m) for m in Metric))
    parser.add_argument("--concurrency", type=positive_int, default=4, metavar="N",
                        help="records judged at once (default 4)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not extras.require("score", extras.judge_extras(args.judge)):
        return extras.EXIT_MISSING_EXTRA
    from ragas_trace.judges import resolve_judge

    to_stdout = str(args.output) == "-"
    try:
        metrics = frozenset(Metric(m.strip()) for m in args.metrics.split(",")) \
            if args.metrics else frozenset(Metric)
        if not to_stdout and same_file(args.input, args.output):
            raise ValueError(f"--output {args.output} is the input file: choose another "
                             "path (the input would be overwritten)")
        total = count_lines(args.input)
        if total == 0:
            print(f"ragas-trace score: no records in {args.input} (empty file); nothing "
                  "written", file=sys.stderr)
            return 1
        judge = resolve_judge(args.judge)
    except (OSError, ValueError, ImportError) as exc:
        print(f"ragas-trace score: {exc}", file=sys.stderr)
        return 2
    try:
        if to_stdout:
            bad = asyncio.run(score_file(args.input, sys.stdout, judge, metrics, total,
                                         args.concurrency))
        else:
            with atomic_output(args.output) as out:
                bad = asyncio.run(score_file(args.input, out, judge, metrics, total,
                                             args.concurrency))
    except OSError as exc:
        print(f"ragas-trace score: {exc}", file=sys.stderr)
        return 2
    if bad:
        print(f"ragas-trace score: {bad} line(s) skipped", file=sys.stderr)
    return 1 if bad else 0


async def score_file(path: Path, out: IO[str], judge: Judge, metrics: frozenset[Metric],
                     total: int, concurrency: int) -> int:
    """Score every record of ``path`` into ``out``; returns the number of bad lines."""
    # A bad line is skipped (never judged); "failed" counts judged records with a
    # failed or timed-out metric, so the two add up to what the summary says.
    progress = Progress("score: lines", total, flag="with a failed metric")
    bad = 0

    def records() -> Iterator[tuple[int, RagRecord | str]]:
        nonlocal bad
        for number, row in jsonl_rows(path):
            if isinstance(row, InputError):
                bad += 1
                yield number, str(row)
                continue
            missing = missing_text_fields(row, _NEEDED)
            if missing:
                bad += 1
                yield number, f"{path}:{number}: missing field(s) {', '.join(missing)} " \
                              "(a string each)"
                continue
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
                progress.advance(skipped=True)
                continue
            out.write(json.dumps({**record.to_dict(), "ragas": scores.to_dict()},
                                 ensure_ascii=False) + "\n")
            progress.advance(failed=any(scores.result(m).status in _FAILURES for m in metrics))
    finally:
        progress.close()
        await judge.aclose()
    return bad

