"""Local judge on the 50 WikiEval records: model load time, records per second and
peak RSS, in a process of its own so nothing else inflates the RSS figure.
``judge_cost.py`` runs it; run it alone with ``python bench/local_judge_speed.py``.

Targets: at least 5 records/s on 2 cores (WikiEval's 630-word contexts), at least 2
records/s with 2,000-word contexts (three WikiEval contexts joined), a 100,000-character
context with a 20,000-character answer scored, model load under 1 s, peak RSS under 400
MB over all of it, and RSS within 2 MB over seven passes of records whose contexts take
random lengths (every pass brings model inputs of new shapes; memory kept per shape
would grow with each). The rate is measured two ways, in alternating passes of the same
process: records sent as the background scorer sends them (up to its default concurrency
at once), which is the judge's throughput in production, and one record at a time (each
awaited before the next), which is one record's latency. Process CPU per record (all
threads) is reported too: on a shared machine it moves less with other jobs than the
wall-clock rate does. The baseline for RSS is this same process just before the model
loads (Python, numpy, the package), measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from overhead_common import rss_mib
from ragas_trace.scorer import BackgroundScorer

# shared/ sits beside the checkout, or where $RAGAS_TRACE_SHARED_DATA says
DATA = Path(os.environ.get("RAGAS_TRACE_SHARED_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data")
            ) / "wikieval-50.json"
WARM_UP_RECORDS = 5
LONG_WORDS = 2000
HUGE_CONTEXT, HUGE_ANSWER = 100_000, 20_000
# Records of many sizes: each model run's shape (batch size x padded width) is new for a
# while, and memory kept per shape would grow with every pass.
VARIED_WORDS, VARIED_PASSES = (50, 1500), 8
SCORER_CONCURRENCY: int = inspect.signature(BackgroundScorer).parameters["concurrency"].default


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def measure(records: int, repeats: int, threads: int | None = None) -> dict[str, Any]:
    from ragas_trace.judges.local import Embedder, LocalJudge

    rows = json.loads(DATA.read_text(encoding="utf-8"))[:records]
    baseline_rss = _rss_mb()
    # No embedding cache: every pass must embed, or repeats would measure cache hits.
    embedder = Embedder(threads=threads, cache_size=0)
    judge = LocalJudge(embedder=embedder)
    started = time.perf_counter()
    judge.load()
    load_s = time.perf_counter() - started

    async def one_pass(at_once: int) -> tuple[float, float]:
        gate = asyncio.Semaphore(at_once)

        async def one(row: dict[str, Any]) -> None:
            async with gate:
                await judge.evaluate(row["question"], [row["context"]], row["gt_answer"])

        began, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(row) for row in rows))
        return (len(rows) / (time.perf_counter() - began),
                (time.process_time() - cpu) / len(rows))

    # Uncounted: the first runs of a session allocate its memory arena, and would
    # count against whichever way of sending records comes first.
    for row in rows[:WARM_UP_RECORDS]:
        judge.evaluate_sync(row["question"], [row["context"]], row["gt_answer"])
    passes: dict[int, list[tuple[float, float]]] = {SCORER_CONCURRENCY: [], 1: []}
    for _ in range(repeats):
        for at_once, done in passes.items():
            done.append(asyncio.run(one_pass(at_once)))
    scorer, alone = passes[SCORER_CONCURRENCY], passes[1]
    # Long contexts: each record's context is WikiEval contexts joined up to 2,000 words.
    every = json.loads(DATA.read_text(encoding="utf-8"))
    joined = " ".join(r["context"] for r in every).split(" ")
    long_rows = [{"question": row["question"], "gt_answer": row["gt_answer"],
                  "context": " ".join((joined * 2)[i * 97:i * 97 + LONG_WORDS])}
                 for i, row in enumerate(rows)]
    rows, kept = long_rows, rows
    long_rates = [asyncio.run(one_pass(SCORER_CONCURRENCY)) for _ in range(repeats)]
    rows = kept
    varied = random.Random(7)
    rss_after_pass = []
    for _ in range(VARIED_PASSES):
        rows = []
        for row in kept:
            words = varied.randint(*VARIED_WORDS)
            start = varied.randrange(len(joined) - words)
            rows.append({**row, "context": " ".join(joined[start:start + words])})
        asyncio.run(one_pass(SCORER_CONCURRENCY))
        rss_after_pass.append(round(rss_mib(), 1))
    rows = kept
    text = " ".join(joined * 2)
    began = time.perf_counter()
    huge = judge.evaluate_sync(rows[0]["question"], [text[:HUGE_CONTEXT]],
                               text[HUGE_CONTEXT:HUGE_CONTEXT + HUGE_ANSWER])
    huge_s = time.perf_counter() - began
    return {"records": len(rows), "repeats": repeats, "threads": embedder.threads,
            "load_s": round(load_s, 3), "scorer_concurrency": SCORER_CONCURRENCY,
            "records_per_s_median": round(statistics.median(r for r, _ in scorer), 2),
            "records_per_s_all": [round(r, 2) for r, _ in scorer],
            "one_at_a_time_records_per_s_median": round(
                statistics.median(r for r, _ in alone), 2),
            "one_at_a_time_records_per_s_all": [round(r, 2) for r, _ in alone],
            # Process CPU (every thread): unlike wall time, barely moved by other jobs.
            "cpu_ms_per_record_median": round(1000 * statistics.median(c for _, c in scorer)),
            "long_context_words": LONG_WORDS,
            "long_records_per_s_median": round(statistics.median(r for r, _ in long_rates), 2),
            "long_records_per_s_all": [round(r, 2) for r, _ in long_rates],
            "varied_words": list(VARIED_WORDS),
            "varied_rss_after_pass_mb": rss_after_pass,
            "huge_record_s": round(huge_s, 2),
            "huge_record_statuses": sorted({str(r.status) for r in huge.results.values()}),
            "load_average": round(os.getloadavg()[0], 2),
            "peak_rss_mb": round(_rss_mb(), 1), "rss_before_model_mb": round(baseline_rss, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                        help="onnxruntime threads (default: every core, as the target is "
                             "records/s on the machine's cores; the judge's own default "
                             "is half of them)")
    parser.add_argument("--save", action="store_true",
                        help="also write bench/results/local_judge_speed.json")
    parser.add_argument("--against", metavar="REV",
                        help="also measure the judge of git revision REV, each in a fresh "
                             "process, alternating with this checkout's (--rounds each)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    result = compare(args) if args.against else measure(args.records, args.repeats,
                                                          args.threads)
    print(json.dumps(result))
    if args.save:
        _save(result, args)
    return 0


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """This checkout's judge and REV's, in alternating fresh processes (so that load
    on a shared machine falls on both alike): this checkout's figures, plus the
    ratio of its median rate to REV's."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", str(repo), "archive", args.against, "src"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", old], input=archive, check=True)
        sources = {"new": str(repo / "src"), "old": str(Path(old) / "src")}
        runs: dict[str, list[dict[str, Any]]] = {"new": [], "old": []}
        for _ in range(args.rounds):
            for name, src in sources.items():
                done = subprocess.run(
                    [sys.executable, __file__, "--records", str(args.records), "--repeats",
                     str(args.repeats), "--threads", str(args.threads)],
                    env={**os.environ, "PYTHONPATH": src}, check=True, capture_output=True,
                    text=True)
                runs[name].append(json.loads(done.stdout.splitlines()[-1]))
    rate = {name: statistics.median(r["records_per_s_median"] for r in rows)
            for name, rows in runs.items()}
    result = dict(runs["new"][-1])
    result |= {"records_per_s_median": round(rate["new"], 2),
               "against": args.against, "against_records_per_s_median": round(rate["old"], 2),
               "ratio_to_against": round(rate["new"] / rate["old"], 3),
               "rounds": {n: [r["records_per_s_median"] for r in rows]
                          for n, rows in runs.items()}}
    return result


def _save(result: dict[str, Any], args: argparse.Namespace) -> None:
    from results_file import write_results

    write_results("local_judge_speed", {
        "model_load_s": {"value": result["load_s"], "unit": "s", "target": "< 1 s",
                         "label": "Local judge: model load (checksums, tokenizer, "
                                  "onnxruntime session), fresh process"},
        "peak_rss_mb": {"value": round(result["peak_rss_mb"]), "unit": "MB",
                        "target": "< 400 MB",
                        "baseline": f"{result['rss_before_model_mb']:.0f} MB before the "
                                    "model loads",
                        "label": "Local judge: peak RSS of a process scoring the "
                                 f"{args.records} WikiEval records"},
        f"records_per_s_{args.threads}_threads": {
            "value": result["records_per_s_median"], "unit": "records/s",
            "target": "≥ 5" if result["records_per_s_median"] >= 5 else "≥ 5 (not met)",
            "baseline": f"one record at a time: "
                        f"{result['one_at_a_time_records_per_s_median']} records/s",
            "label": f"Local judge, {args.threads} threads, records sent as the background "
                     f"scorer sends them (up to {result['scorer_concurrency']} at once), "
                     f"fresh process (median of {args.repeats})"},
        f"long_records_per_s_{args.threads}_threads": {
            "value": result["long_records_per_s_median"], "unit": "records/s",
            "target": "≥ 2" if result["long_records_per_s_median"] >= 2 else "≥ 2 (not met)",
            "baseline": f"630-word contexts: {result['records_per_s_median']} records/s",
            "label": f"Local judge, {args.threads} threads, {result['long_context_words']}-word "
                     f"contexts, records sent as the background scorer sends them (median "
                     f"of {args.repeats})"},
        "varied_rss_growth_mb": {
            "value": round(result["varied_rss_after_pass_mb"][-1]
                           - result["varied_rss_after_pass_mb"][0], 1),
            "unit": "MB", "target": "<= 2",
            "baseline": f"RSS after the first pass: {result['varied_rss_after_pass_mb'][0]} MB",
            "label": f"Local judge: RSS growth over passes 2-{VARIED_PASSES} of "
                     f"{args.records} records of {VARIED_WORDS[0]}-{VARIED_WORDS[1]}-word "
                     "contexts (new model input shapes in every pass)"},
        "huge_record_s": {
            "value": result["huge_record_s"], "unit": "s",
            "label": f"Local judge: one record of a {HUGE_CONTEXT:,}-character context and a "
                     f"{HUGE_ANSWER:,}-character answer, statuses "
                     f"{', '.join(result['huge_record_statuses'])}"},
        f"one_at_a_time_records_per_s_{args.threads}_threads": {
            "value": result["one_at_a_time_records_per_s_median"], "unit": "records/s",
            "label": f"Local judge, {args.threads} threads, one record at a time (each "
                     f"awaited before the next; median of {args.repeats})"},
        f"cpu_ms_per_record_{args.threads}_threads": {
            "value": result["cpu_ms_per_record_median"], "unit": "ms",
            "label": f"Local judge, {args.threads} threads: process CPU per record "
                     f"(median of {args.repeats})"},
    } | ({"ratio_to_previous_code": {
        "value": result["ratio_to_against"], "target": "≥ 0.8",
        "baseline": f"the judge of {result['against']}: "
                    f"{result['against_records_per_s_median']} records/s",
        "label": f"Local judge, {args.threads} threads: records/s against the code it "
                 f"replaced, alternating fresh processes ({args.rounds} rounds each)"}}
         if args.against else {}),
       command=" ".join(["python", "bench/local_judge_speed.py", *sys.argv[1:]]))


if __name__ == "__main__":
    sys.exit(main())
