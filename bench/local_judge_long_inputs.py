"""Time per record of the local judge on long inputs, against a 630-word WikiEval
record measured in the same run (issue 12, row 10): a context at the judge's limit
(``MAX_CONTEXT_CHARS``, WikiEval contexts joined), a 200 KB context and a 200 KB
answer (both over the limits, so the metrics they would slow down are ``skipped``).
Each input is scored ``--repeats`` times with a fresh embedding cache; medians.

    python bench/local_judge_long_inputs.py [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ragas_trace.judges.local import Embedder, LocalJudge
from ragas_trace.judges.local.judge import MAX_CONTEXT_CHARS
from results_file import write_results

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikieval-50.json"
LONG = 200_000


def cases(rows: list[dict[str, Any]]) -> dict[str, tuple[str, list[str], str]]:
    first = rows[0]
    joined = "\n".join(r["context"] for r in rows)
    at_limit = joined[:MAX_CONTEXT_CHARS]
    return {
        "wikieval_record": (first["question"], [first["context"]], first["gt_answer"]),
        "context_at_limit": (first["question"], [at_limit], first["gt_answer"]),
        "context_200kb": (first["question"], [(joined * 2)[:LONG]], first["gt_answer"]),
        "answer_200kb": (first["question"], [first["context"]], (joined * 2)[:LONG]),
    }


def measure(threads: int, repeats: int) -> dict[str, Any]:
    rows = json.loads(DATA.read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for name, (question, contexts, answer) in cases(rows).items():
        times, statuses = [], {}
        for _ in range(repeats):
            judge = LocalJudge(embedder=Embedder(threads=threads, cache_size=0))
            judge.load()
            began = time.perf_counter()
            scores = judge.evaluate_sync(question, contexts, answer)
            times.append(time.perf_counter() - began)
            statuses = {str(m): str(r.status) for m, r in scores.results.items()}
        out[name] = {"seconds": round(statistics.median(times), 3), "statuses": statuses,
                     "context_chars": sum(len(c) for c in contexts), "answer_chars": len(answer)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    report = measure(args.threads, args.repeats)
    print(json.dumps(report, indent=1))
    if not args.no_write:
        base = report["wikieval_record"]["seconds"]
        write_results("local_judge_long_inputs", {
            name: {"value": r["seconds"], "unit": "s per record", "baseline": base,
                   "baseline_label": "one 630-word WikiEval record, same run",
                   "label": f"{name}: {r['context_chars']} context / {r['answer_chars']} "
                            f"answer chars; statuses {r['statuses']}"}
            for name, r in report.items()}, command="python bench/local_judge_long_inputs.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
