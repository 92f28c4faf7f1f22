"""``ragas-trace score``: batch scoring of saved records. Each input line is a record
(``question``, ``contexts`` as strings or objects with ``content``, ``answer``; the
format ``RagRecord.to_dict`` writes); each output line is that record with its
scores under ``"ragas"`` (``Scores.to_dict``), in input order.

The input is UTF-8 JSON lines (a byte-order mark at the start is read). A bad line
(not UTF-8, not JSON, no ``question`` or ``answer`` string, a field of the wrong
type) is reported on stderr with its file name and line number and skipped; the
run goes on. A metric the judge did not score (failed, timed out or skipped, e.g.
over a size limit) is counted on stderr, by metric, with the reason. The output
file is written atomically (a temporary file in its directory, renamed at the end)
and only when a record was scored: an interrupted or failed run, or one with
nothing to write, leaves an existing output as it was. The output may not be the
input file (also through a symlink or another path to it).

exit codes:
  0  every line scored (a metric may still be failed, timed out or skipped: stderr
     counts them by metric and reason, "ragas" in each line has every record's)
  1  some lines were skipped (the others are written), or no line could be
     scored: the input is empty or every line is bad (nothing is written)
  2  bad arguments (no API key for --judge openai, an unknown metric), the output
     is the input, or a file could not be read or written"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ragas_trace._surrogates import without_surrogates
from ragas_trace.cli import extras
from ragas_trace.cli._batch import (
    InputError,
    Progress,
    cli_judge,
    count_lines,
    file_problem,
    in_order,
    jsonl_rows,
    positive_int,
    text_field_problems,
)
from ragas_trace.cli.safe_output import atomic_output, same_file
from ragas_trace.judges.base import Judge
from ragas_trace.record import RagRecord
from ragas_trace.results import Metric, MetricStatus, Scores

_FAILURES = (MetricStatus.FAILED, MetricStatus.TIMEOUT)
# Asked for and not scored for a reason of the judge's (not of the record's: a record
# with no context or no claim in its answer gets its own status).
_NOT_DONE = (*_FAILURES, MetricStatus.SKIPPED)
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
    to_stdout = str(args.output) == "-"
    try:
        metrics = frozenset(Metric(m.strip()) for m in args.metrics.split(",")) \
            if args.metrics else frozenset(Metric)
    except ValueError:
        print(f"ragas-trace score: --metrics {args.metrics}: each must be one of "
              f"{', '.join(str(m) for m in Metric)}", file=sys.stderr)
        return 2
    try:
        if not to_stdout and same_file(args.input, args.output):
            raise ValueError(f"--output {args.output} is the input file: choose another "
                             "path (the input would be overwritten)")
        total = count_lines(args.input)
        if total == 0:
            print(f"ragas-trace score: no records in {args.input} (empty file); nothing "
                  "written", file=sys.stderr)
            return 1
        judge = cli_judge(args.judge)
    except (ValueError, ImportError) as exc:  # InputError (a ValueError) names the file
        print(f"ragas-trace score: {exc}", file=sys.stderr)
        return 2
    try:
        if to_stdout:
            summary = asyncio.run(score_file(args.input, sys.stdout, judge, metrics, total,
                                             args.concurrency))
        else:
            with atomic_output(args.output, keep_empty=False) as out:
                summary = asyncio.run(score_file(args.input, out, judge, metrics, total,
                                                 args.concurrency))
    except InputError as exc:
        print(f"ragas-trace score: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"ragas-trace score: {file_problem('--output', args.output, exc)}",
              file=sys.stderr)
        return 2
    for line in summary.unscored_lines():
        print(f"ragas-trace score: {line}", file=sys.stderr)
    if summary.bad:
        print(f"ragas-trace score: {summary.bad} line(s) skipped", file=sys.stderr)
    if not summary.scored:
        where = "" if to_stdout else f" ({args.output} not written)"
        print(f"ragas-trace score: no line of {args.input} could be scored; nothing "
              f"written{where}", file=sys.stderr)
    return 1 if summary.bad or not summary.scored else 0


@dataclass
class Summary:
    """What a run did: lines skipped as bad, records scored, and the metrics the judge
    was asked for but did not score, by (metric, status), with their reasons."""

    bad: int = 0
    scored: int = 0
    unscored: dict[tuple[Metric, MetricStatus], Counter[str]] = field(default_factory=dict)

    def count(self, scores: Scores, metrics: frozenset[Metric]) -> None:
        self.scored += 1
        for metric in sorted(metrics):
            result = scores.result(metric)
            if result.status in _NOT_DONE:
                self.unscored.setdefault((metric, result.status), Counter())[
                    result.reason or "no reason given"] += 1

    def unscored_lines(self) -> list[str]:
        """'faithfulness skipped in 1 of 3 records (answer over ...)': the most common
        reason of each (metric, status)."""
        return [f"{metric} {status} in {sum(reasons.values())} of {self.scored} records "
                f"({reasons.most_common(1)[0][0]})"
                for (metric, status), reasons in self.unscored.items()]


async def score_file(path: Path, out: IO[str], judge: Judge, metrics: frozenset[Metric],
                     total: int, concurrency: int) -> Summary:
    """Score every record of ``path`` into ``out``."""
    # A bad line is skipped (never judged); "failed" counts judged records with a
    # failed or timed-out metric, so the two add up to what the summary says.
    progress = Progress("score: lines", total, flag="with a failed metric")
    summary = Summary()

    def records() -> Iterator[tuple[int, RagRecord | str]]:
        for number, row in jsonl_rows(path):
            if isinstance(row, InputError):
                summary.bad += 1
                yield number, str(row)
                continue
            problems = text_field_problems(row, _NEEDED)
            if problems:
                summary.bad += 1
                yield number, f"{path}:{number}: {'; '.join(problems)}"
                continue
            try:
                yield number, RagRecord.from_dict(row)
            except ValueError as exc:
                summary.bad += 1
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
            out.write(_json_line({**record.to_dict(), "ragas": scores.to_dict()}))
            summary.count(scores, metrics)
            progress.advance(failed=any(scores.result(m).status in _FAILURES for m in metrics))
    finally:
        progress.close()
        await judge.aclose()
    return summary


def _json_line(row: dict[str, Any]) -> str:
    """One output line: the text as it is, except that a lone surrogate (which a JSON
    escape such as "\\udc80" in the input gives, and UTF-8 cannot hold) stays escaped."""
    line = json.dumps(row, ensure_ascii=False)
    if without_surrogates(line) is not line:
        line = json.dumps(row)
    return line + "\n"
