"""What loading the local judge does to glibc's mmap threshold in the app's process.

glibc serves a block of at least its mmap threshold with a ``mmap`` of its own, given
back when freed; smaller blocks come from the malloc arenas, which keep freed memory
(and trim an arena's top only past twice the threshold). The threshold starts at
128 KiB and rises to the size of every larger mmapped block freed, up to 32 MiB. So
whatever frees a large block once decides where the app's later blocks of up to that
size live. The soak (bench/soak.py) found an app with ragas-trace keeping more RSS
than the same app without it, with its Python heap flat; this bench measures the
threshold each step leaves behind, in a fresh process per step:

  fresh        Python with numpy, nothing else
  app_request  fresh, then a 1 MB string made and dropped (what the soak's app does
               with a huge request of its own, ragas-trace or not)
  tokenizer    fresh, then the judge's tokenizer loaded
  local_judge_glibc  fresh, then the local judge loaded (tokenizer, model) with
               RAGAS_TRACE_MMAP_THRESHOLD=0: the threshold left to glibc
  local_judge  the same as ragas-trace loads it: the threshold fixed at 1 MiB first
               (ragas_trace.allocator)

The probe, in a child forked after the step (so that probing changes nothing it
measures): allocate blocks of one size until 256 MiB are taken and count how many
glibc mmapped (``mallinfo2``). A size mostly mmapped is at or over the threshold; the
figure is the largest size of the ladder served from the arenas. Linux with glibc
only.

What fixing the threshold costs: a 2 MiB numpy array made, filled, summed and freed,
once the local judge has loaded, with the threshold fixed and left to glibc (the two
steps run alternately three times; the figure is the ratio).

    python bench/allocator_threshold.py          # writes bench/results/allocator_threshold.json
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from glibc_malloc import mallinfo2

LADDER_KIB = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
PROBE_BYTES = 256 << 20
BLOCK_BYTES = 2 << 20
# The judge's steps, fixed and left to glibc, alternately: their block costs are a ratio.
COST_STEPS, COST_ROUNDS = ("local_judge", "local_judge_glibc"), 3
STEPS = {
    "fresh": {},
    "app_request": {},
    "tokenizer": {},
    "local_judge_glibc": {"RAGAS_TRACE_MMAP_THRESHOLD": "0"},
    "local_judge": {},
}


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = (ctypes.c_size_t,)
    return libc


def _mmapped_blocks() -> int:
    info = mallinfo2()
    if info is None:
        raise RuntimeError("no glibc mallinfo2")
    return int(info.hblks)


def mmapped_share(size: int) -> float:
    """In a forked child: the share of ``size``-byte blocks glibc mmapped, allocating
    them (never freed: the child exits) until ``PROBE_BYTES`` are taken, so that the
    arenas' free memory is used up and the rest shows where new blocks go."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        libc = _libc()
        before = _mmapped_blocks()
        count = max(8, PROBE_BYTES // size)
        for _ in range(count):
            libc.malloc(size)
        os.write(write_end, str((_mmapped_blocks() - before) / count).encode())
        os._exit(0)
    os.close(write_end)
    os.waitpid(pid, 0)
    with os.fdopen(read_end) as f:
        return float(f.read())


def step(name: str) -> dict[str, object]:
    """Run ``name`` in this (fresh) process, then probe."""
    import numpy  # noqa: F401  (the fresh process of every step has it)

    if name == "app_request":
        text = "x" * 1_000_000
        del text
    elif name == "tokenizer":
        from tokenizers import Tokenizer

        from ragas_trace.judges.local.embedder import default_tokenizer_path
        Tokenizer.from_file(str(default_tokenizer_path()))
    elif name.startswith("local_judge"):
        from ragas_trace.judges.local import LocalJudge
        LocalJudge().load()
    shares = {kib: mmapped_share(kib << 10) for kib in LADDER_KIB}
    from_arenas = [kib for kib, share in shares.items() if share < 0.5]
    cost = {"block_us": block_cost_us()} if name in COST_STEPS else {}
    return {"arena_ceiling_kib": max(from_arenas, default=0), "mmapped_share": shares, **cost}


def block_cost_us(blocks: int = 200, repeats: int = 7) -> float:
    """What a 2 MiB block costs the app: a numpy array made, filled, read and freed,
    microseconds (median of ``repeats``)."""
    import numpy as np

    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        for _ in range(blocks):
            float(np.ones(BLOCK_BYTES // 8).sum())
        times.append((time.perf_counter() - began) / blocks * 1e6)
    return round(statistics.median(times), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", choices=sorted(STEPS), help=argparse.SUPPRESS)
    parser.add_argument("--no-write", action="store_true",
                        help="print, do not write bench/results/allocator_threshold.json")
    args = parser.parse_args()
    if args.step:
        print(json.dumps(step(args.step)))
        return 0
    if mallinfo2() is None:
        print("allocator_threshold: needs Linux with glibc 2.33+ (mallinfo2)", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "RAGAS_TRACE_MMAP_THRESHOLD"}

    def run(name: str) -> dict[str, Any]:
        out = subprocess.run([sys.executable, __file__, "--step", name],
                             env={**env, **STEPS[name]}, capture_output=True, text=True,
                             check=True, timeout=300)
        result: dict[str, Any] = json.loads(out.stdout)
        print(name, result, flush=True)
        return result

    measured = {name: run(name) for name in STEPS}
    costs = {name: [float(measured[name]["block_us"])] for name in COST_STEPS}
    for _ in range(COST_ROUNDS - 1):
        for name, runs in costs.items():
            runs.append(float(run(name)["block_us"]))
    if args.no_write:
        return 0
    from results_file import repeated, write_results

    labels = {
        "fresh": "a fresh Python process (numpy imported)",
        "app_request": "a fresh process after a 1 MB string of its own was freed",
        "tokenizer": "a fresh process after the local judge's tokenizer loaded",
        "local_judge_glibc": "a fresh process after the local judge loaded "
                             "(tokenizer and model), RAGAS_TRACE_MMAP_THRESHOLD=0",
        "local_judge": "a fresh process after the local judge loaded, as it loads by "
                       "default (threshold fixed at 1 MiB first)",
    }
    write_results("allocator_threshold", {
        f"{name}.arena_ceiling_kib": {
            "value": m["arena_ceiling_kib"], "unit": "KiB", "exact": True,
            "label": f"glibc: largest block served from the malloc arenas (not mmapped), "
                     f"{labels[name]}"}
        for name, m in measured.items()} | {
        "block_cost_ratio": {
            **repeated([a / b for a, b in zip(*costs.values(), strict=True)], 2),
            "baseline": f"{statistics.median(costs['local_judge_glibc']):.0f} µs with "
                        "RAGAS_TRACE_MMAP_THRESHOLD=0",
            "label": "glibc: a 2 MiB numpy array made, filled, summed and freed, once the "
                     "local judge loaded with the threshold fixed at 1 MiB, over the same "
                     f"with it left to glibc (median of {COST_ROUNDS} alternate runs)"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
