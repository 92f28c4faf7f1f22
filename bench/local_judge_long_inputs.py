"""Time per record of the local judge on long inputs, against a 630-word WikiEval
record measured in the same run: WikiEval contexts joined to 12,000 characters
(about 2,000 words) and to 100,000, an answer of 20,000 characters, both at once, and a
context over the judge's bound (``MAX_CONTEXT_CHARS``), whose metrics are ``skipped``,
and a question at and over its bound (``MAX_QUESTION_CHARS``).
Each statement is read against its own window of a long context, so time grows with
the lengths, not with their product. Each input is scored ``--repeats`` times with a
fresh embedding cache; medians.

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
from ragas_trace.judges.local.judge import MAX_CONTEXT_CHARS, MAX_QUESTION_CHARS
from results_file import write_results

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikieval-50.json"
HUGE_CONTEXT, HUGE_ANSWER = 100_000, 20_000


def cases(rows: list[dict[str, Any]]) -> dict[str, tuple[str, list[str], str]]:
    first = rows[0]
    joined = "\n".join(r["context"] for r in rows) * 2
    answer = joined[-HUGE_ANSWER:]
    return {
        "wikieval_record": (first["question"], [first["context"]], first["gt_answer"]),
        "context_12k": (first["question"], [joined[:12_000]], first["gt_answer"]),
        "context_100k": (first["question"], [joined[:HUGE_CONTEXT]], first["gt_answer"]),
        "answer_20k": (first["question"], [first["context"]], answer),
        "context_100k_answer_20k": (first["question"], [joined[:HUGE_CONTEXT]], answer),
        "context_over_bound": (first["question"], [joined[:MAX_CONTEXT_CHARS + 1]],
                               first["gt_answer"]),
        # A question's terms are read against each context sentence read.
        "question_at_bound": (joined[:MAX_QUESTION_CHARS - 1] + "?", [first["context"]],
                              first["gt_answer"]),
        "question_over_bound": (joined[:MAX_QUESTION_CHARS] + "?", [first["context"]],
                                first["gt_answer"]),
        # Text no one writes but anyone can send: each once took seconds to minutes
        # in a regex or splitter tried from every position of a long run.
        # (Within the question's bound, so that the splitter reads it.)
        "question_19k_spaces": (first["question"] + " " * 19_000 + "?", [first["context"]],
                                first["gt_answer"]),
        "answer_20k_spaces": (first["question"], [first["context"]],
                              first["gt_answer"] + " " * 20_000 + "."),
        "context_33k_tiny_sentences": (first["question"], ["Ab. " * 33_000 + first["context"]],
                                       first["gt_answer"]),
        # One sentence of 15,000 negations against 40 statements: 98 s when the words
        # a sentence denies were looked up again for each statement, by a scan of its
        # tokens from each negation.
        "sentence_15k_negations": (
            "What is fine?", [" ".join(f"not w{i}" for i in range(15_000)) + "."],
            " ".join(f"Statement {i} says w{i} is fine." for i in range(40))),
        # Every sentence holds every statement's words: each statement's window was
        # found by scoring all 10,000 sentences.
        "same_words_in_every_sentence": ("电池多少钱？", ["电池的价格是一百元。" * 10_000],
                                         "一百元。" * 5_000),
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
