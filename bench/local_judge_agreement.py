"""Pairwise agreement of the local judge against a naive lexical baseline measured in
the same run, per data set and split (the protocol of ``ragas-trace eval``).

Data sets: the public extractive-QA pairs (``tests/judges/local/data/public_pairs.jsonl``,
built by ``tools/build_public_pairs.py``; splits ``<source>-<lang>/dev`` were used
while developing the judge, ``/held_out`` were not) and the development-style cases
(``tests/judges/local/dev_cases.jsonl``, ``extra_cases.jsonl``).

Public pairs are also reported per kind of wrong answer (``public_by_kind``:
``<part>/<kind>``, every language pooled), since the baseline is strong on some kinds
(a word the passage lacks) and at chance on others (every word in the passage).

The lexical baseline, per metric: faithfulness is the share of the answer's content
words (CJK: characters) found in the context; answer relevance the share of the
question's content words found in the answer; context relevance the share of context
sentences that contain any content word of the question.

    python bench/local_judge_agreement.py [--threads 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragas_trace.cli.eval_cmd import evaluate, load_cases, preference_point
from ragas_trace.judges.local import Embedder, LocalJudge
from ragas_trace.judges.local.lexicon import STOPWORDS
from ragas_trace.metrics.sentences import split_sentences
from results_file import write_results

TESTS = Path(__file__).resolve().parents[1] / "tests" / "judges" / "local"
DATASETS = {"public": TESTS / "data" / "public_pairs.jsonl",
            "dev_cases": TESTS / "dev_cases.jsonl",
            "extra_cases": TESTS / "extra_cases.jsonl"}
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
_WORD = re.compile(r"[\u3400-\u9fff]|[^\W_]+")


def words(text: str) -> set[str]:
    return {w for w in (m.group(0).casefold() for m in _WORD.finditer(text))
            if w not in STOPWORDS}


def share(part: set[str], whole: set[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def lexical(question: str, context: str, answer: str) -> dict[str, float]:
    sentences = split_sentences(context)
    q = words(question)
    return {"faithfulness": share(words(answer), words(context)),
            "answer_relevance": share(q, words(answer)),
            "context_relevance": sum(1 for s in sentences if q & words(s))
            / max(1, len(sentences))}


def group(row: dict[str, Any]) -> str:
    """Rows are judged by split and kind of wrong answer (public pairs), and reported
    both per split and per kind."""
    split = row.get("split") or "all"
    return f"{split}|{row['kind']}" if row.get("kind") else split


def lexical_agreement(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    points: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        q, c = row["question"], row["context"]
        good = lexical(q, c, row["answer"])
        pairs = {"faithfulness": lexical(q, c, row["ungrounded_answer"]),
                 "answer_relevance": lexical(q, c, row["poor_answer"]),
                 "context_relevance": lexical(q, row["context_padded"], row["answer"])}
        split = points.setdefault(group(row), {m: [] for m in METRICS})
        for metric, worse in pairs.items():
            split[metric].append(preference_point(good[metric], worse[metric]))
    return {s: {m: round(sum(p) / len(p), 4) for m, p in ms.items()} for s, ms in points.items()}


def measure(threads: int) -> dict[str, Any]:
    # No embedding cache, so that a run gives the same figures as the last: a vector
    # moves slightly with the texts that share its model run, and with a cache it
    # would be whichever record embedded a sentence first, which concurrent records
    # change from run to run.
    judge = LocalJudge(embedder=Embedder(threads=threads, cache_size=0))
    judge.load()
    report: dict[str, Any] = {}
    for name, path in DATASETS.items():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
        cases = [replace(case, split=group(row))
                 for case, row in zip(load_cases(path), rows, strict=True)]
        judged = asyncio.run(evaluate(cases, judge, concurrency=4))["splits"]
        baseline = lexical_agreement(rows)
        groups = {g: {m: {"judge": judged[g][m]["agreement"], "lexical": baseline[g][m],
                          "pairs": judged[g][m]["pairs"]} for m in METRICS}
                  for g in judged}
        report[name] = pooled(groups, lambda g: g.split("|")[0])
        if any("|" in g for g in groups):
            # Per kind of wrong answer, over all languages: "held_out/sentence".
            report[f"{name}_by_kind"] = pooled(
                groups, lambda g: g.split("|")[0].split("/")[1] + "/" + g.split("|")[1]) \
                | pooled(groups, lambda g: g.split("|")[0].split("/")[1] + "/all kinds")
    return report


def pooled(groups: dict[str, dict[str, dict[str, float]]],
           key: Callable[[str], str]) -> dict[str, dict[str, dict[str, float]]]:
    """Agreement of several groups taken together (weighted by their pairs)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name in sorted({key(g) for g in groups}):
        members = [metrics for g, metrics in groups.items() if key(g) == name]
        out[name] = {}
        for m in METRICS:
            pairs = sum(r[m]["pairs"] for r in members)
            out[name][m] = {
                "judge": round(sum(r[m]["judge"] * r[m]["pairs"] for r in members) / pairs, 4),
                "lexical": round(sum(r[m]["lexical"] * r[m]["pairs"] for r in members)
                                 / pairs, 4),
                "pairs": pairs}
    return out


def figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for dataset, splits in report.items():
        for split, metrics in splits.items():
            for metric, r in metrics.items():
                figure = {
                    "value": r["judge"], "baseline": r["lexical"], "pairs": r["pairs"],
                    "label": f"pairwise agreement, {metric}, {dataset} {split}",
                    "baseline_label": "lexical overlap, same pairs, same run"}
                if dataset == "public" and split.endswith("/held_out"):
                    # The README shows the figures with a target: the held-out public ones.
                    figure["label"] = (f"Local judge, {metric} agreement on held-out "
                                       f"{split.removesuffix('/held_out')} pairs "
                                       f"({r['pairs']}) vs the lexical baseline")
                    figure["target"] = "above the baseline" + (
                        "" if r["judge"] > r["lexical"] else " (not met)")
                out[f"{dataset}:{split}:{metric}"] = figure
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    report = measure(args.threads)
    print(json.dumps(report, indent=1, ensure_ascii=False))
    if not args.no_write:
        write_results("local_judge_agreement", figures(report),
                      command="python bench/local_judge_agreement.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
