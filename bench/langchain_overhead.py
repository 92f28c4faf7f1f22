"""Added cost per invoke of LangChain tracing, on fake RAG apps, interleaved.

Shapes (``--shapes``, both by default; bench/langchain_apps.py):
  chain  an LCEL chain: retriever | prompt | chat model | parser
  agent  ``create_agent`` with one retrieval tool: two model calls and a tool call
         whose retriever returns 4 passages

Configurations (each timed over the same app, in shuffled order every round):
  base   no callbacks at all
  a      a no-op ``BaseCallbackHandler``
  b      ragas-trace's ``RagasCallbackHandler``
  c      openinference-instrumentation-langchain
  d      OpenLLMetry's opentelemetry-instrumentation-langchain
  lb     a lower bound for any handler making (b)'s spans: a run map, and the spans
         with attributes prepared in advance, made in one burst at the root's end
  spans  (b)'s spans created and ended outside any framework, in a tight loop
  spans_app  the same, each burst right after a plain chain invoke (untimed)
b, c, d, lb and spans all export through the same ``SimpleSpanProcessor`` to an
exporter that discards. The floor is F = (a - base) + spans. Targets: b - base <= 1.3 F
and b - base <= min(c - base, d - base) / 5. Then the memory check: many invokes
through (b), RSS before and after.

Each peer runs in a process of its own (they patch LangChain for good), the other
configurations share one; the processes take turns. Costs are process CPU time (all
threads; the machine is shared, and CPU time is not charged for other processes'
work), with wall time too.

Run by hand, in the venv that has the peers (they patch LangChain globally, so they
are kept out of the test venv):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install -e '.[bench,frameworks-test]'
    .venv-bench/bin/python bench/langchain_overhead.py --rounds 20 --rss-invokes 50000
    .venv-bench/bin/python bench/langchain_overhead.py --shapes agent --rss-invokes 0
    .venv-bench/bin/python bench/langchain_overhead.py --instructions --invokes 30
    .venv-bench/bin/python bench/langchain_overhead.py --rounds 0 --rss-invokes 50000

``--instructions`` counts instructions instead of timing: each configuration runs
``--invokes`` warm invokes in a process of its own under valgrind's callgrind (only
those invokes are counted). Counts do not move with the machine's load, so on a
shared machine they give the steadiest ratios; they weigh every instruction the same,
where time does not (cache misses, syscalls).

Figures are medians over rounds of per-round differences against ``base``; every
run's figures are merged into bench/results/langchain_overhead.json, each figure kept
from an earlier run tagged with that run's command and date.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from langchain_apps import SHAPES
from overhead_common import (
    DiscardExporter,
    added_costs,
    count_instructions,
    discarding_provider,
    importable,
    print_floor_ratio,
    print_peer_ratios,
    rss_mib,
    run_counted,
    span_replay,
)
from ragas_trace.collectors.langchain import RagasCallbackHandler
from results_file import write_results

Invoke = Callable[[], object]


# Configurations: each sets itself up in its worker process and returns the call to time.

def setup_base(app: Any, request: Any) -> Invoke:
    return lambda: app.invoke(request)


def setup_noop(app: Any, request: Any) -> Invoke:
    config: Any = {"callbacks": [BaseCallbackHandler()]}
    return lambda: app.invoke(request, config=config)


def setup_ours(app: Any, request: Any) -> Invoke:
    config: Any = {"callbacks": [RagasCallbackHandler(discarding_provider())]}
    return lambda: app.invoke(request, config=config)


def setup_openinference(app: Any, request: Any) -> Invoke:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=discarding_provider())
    return lambda: app.invoke(request)


def setup_openllmetry(app: Any, request: Any) -> Invoke:
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=discarding_provider())
    return lambda: app.invoke(request)


def setup_bare_spans(app: Any, request: Any) -> Invoke:
    """The spans our handler makes for one invoke, replayed straight on the SDK."""
    return _span_replay(app, request)


def _span_replay(app: Any, request: Any) -> Invoke:
    memory = InMemorySpanExporter()
    capture = TracerProvider()
    capture.add_span_processor(SimpleSpanProcessor(memory))
    app.invoke(request, config={"callbacks": [RagasCallbackHandler(capture)]})
    return span_replay(memory.get_finished_spans())


class _LowerBoundHandler(BaseCallbackHandler):
    """A lower bound for any callback handler making these spans: it only maps runs
    to their request (a dict, no lock) and, when the root run ends, makes the same
    spans with attributes prepared in advance, in one burst. Nothing is read from
    LangChain's objects."""

    def __init__(self, replay: Invoke) -> None:
        self._replay = replay
        self._runs: dict[Any, Any] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                       parent_run_id: Any = None, **kwargs: Any) -> None:
        self._runs[run_id] = parent_run_id

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        if self._runs.pop(run_id, None) is None:
            self._replay()

    on_retriever_start = on_chain_start
    on_chat_model_start = on_chain_start

    def on_tool_start(self, serialized: Any, input_str: Any, *, run_id: Any,
                      parent_run_id: Any = None, **kwargs: Any) -> None:
        self._runs[run_id] = parent_run_id

    def on_retriever_end(self, documents: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    def on_tool_end(self, output: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)


def setup_lower_bound(app: Any, request: Any) -> Invoke:
    config: Any = {"callbacks": [_LowerBoundHandler(_span_replay(app, request))]}
    return lambda: app.invoke(request, config=config)


SHAPE_TITLES = {"chain": "LCEL RAG chain",
                "agent": "create_agent, 2 model calls, 1 retrieval tool"}

CONFIGS: dict[str, Callable[[Any, Any], Invoke]] = {
    "base": setup_base,
    "a": setup_noop,
    "b": setup_ours,
    "c": setup_openinference,
    "d": setup_openllmetry,
    "lb": setup_lower_bound,
    "spans": setup_bare_spans,
    "spans_app": setup_bare_spans,  # timed between chain invokes (see run_worker)
}
LABELS = {
    "a": "(a) no-op BaseCallbackHandler",
    "b": "(b) ragas-trace RagasCallbackHandler",
    "c": "(c) openinference-instrumentation-langchain",
    "d": "(d) opentelemetry-instrumentation-langchain (OpenLLMetry)",
    "lb": "(lb) lower bound: run map + the same spans pre-built, made at the root's end",
    "spans": "bare SDK spans (same spans, same attributes, no framework), tight loop",
    "spans_app": "the same bare spans, each made right after a plain chain invoke",
}


def run_worker(names: list[str], shape: str) -> int:
    """Serve timed blocks for some configurations: read "NAME N", answer
    "wall_us cpu_us spans"."""
    build, request = SHAPES[shape]
    app = build()
    invokes = {name: CONFIGS["spans" if name == "spans_app" else name](app, request)
               for name in names}
    for invoke in invokes.values():
        for _ in range(20):
            invoke()
    print("ready", flush=True)
    for line in sys.stdin:
        name, count = line.split()
        n, invoke = int(count), invokes[name]
        for _ in range(max(n // 10, 5)):  # re-warm caches the other blocks cooled
            invoke()
        gc.collect()
        DiscardExporter.exported = 0
        if name == "spans_app":
            wall, cpu = _time_between_invokes(lambda: app.invoke(request), invoke, n)
        else:
            wall, cpu = time.perf_counter_ns(), time.process_time_ns()
            for _ in range(n):
                invoke()
            cpu, wall = time.process_time_ns() - cpu, time.perf_counter_ns() - wall
        print(f"{wall / n / 1000} {cpu / n / 1000} {DiscardExporter.exported / n}", flush=True)
    return 0


def run_count(name: str, shape: str, n: int) -> int:
    """One configuration's ``n`` counted invokes, after a warm-up (``--instructions``)."""
    build, request = SHAPES[shape]
    app = build()
    invoke = CONFIGS[name](app, request)
    for _ in range(20):
        invoke()
    gc.collect()
    run_counted(invoke, n)
    return 0


def measure_instructions(names: list[str], shape: str, n: int) -> dict[str, float]:
    """Instructions per invoke of each configuration (``spans``: per replay), two
    valgrind processes at a time."""
    def count(name: str) -> float:
        command = [sys.executable, __file__, "--count", name, "--shape", shape,
                   "--invokes", str(n)]
        return count_instructions(command) / n

    counted = [name for name in names if name != "spans_app"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        per_invoke = dict(zip(counted, pool.map(count, counted), strict=True))
    for name, value in per_invoke.items():
        print(f"  {shape} {name}: {value:,.0f} instructions per invoke", file=sys.stderr)
    return per_invoke


def report_instructions(shape: str, per_invoke: dict[str, float]) -> dict[str, dict[str, Any]]:
    base = per_invoke["base"]
    added = {n: v - base for n, v in per_invoke.items() if n not in ("base", "spans")}
    floor = added["a"] + per_invoke["spans"]
    print(f"\n== {shape}: instructions per invoke (callgrind) ==")
    print(f"base invoke (no callbacks): {base:,.0f}")
    print(f"{LABELS['spans']}: {per_invoke['spans']:,.0f}")
    for name, cost in added.items():
        print(f"{LABELS[name]}: +{cost:,.0f} = {cost / floor:.2f} F")
    print_floor_ratio("F", added["b"], floor)
    print_peer_ratios(added["b"], added)
    figures: dict[str, dict[str, Any]] = {
        f"{shape}.instructions.floor_ratio": {
            "value": round(added["b"] / floor, 2), "target": "<= 1.3", "exact": True,
            "baseline": "no-op handler + the same spans on the bare SDK",
            "label": f"{SHAPE_TITLES[shape]}: ragas-trace instructions / floor's"}}
    peers = [added[n] for n in ("c", "d") if n in added]
    if peers:
        ratio = added["b"] / min(peers)
        figures[f"{shape}.instructions.peer_ratio"] = {
            "value": round(ratio, 3), "target": "<= 0.2", "exact": True,
            "baseline": "the cheaper of OpenInference and OpenLLMetry, instructions per invoke",
            "label": f"{SHAPE_TITLES[shape]}: ragas-trace instructions / cheapest peer's"}
        if "lb" in added:
            # What the lower-bound handler (lb) gets: the best any handler making
            # these spans could do against the same peer.
            figures[f"{shape}.instructions.lower_bound_peer_ratio"] = {
                "value": round(added["lb"] / min(peers), 3), "exact": True,
                "baseline": "the cheaper of OpenInference and OpenLLMetry, instructions per invoke",
                "label": f"{SHAPE_TITLES[shape]}: lower-bound handler (lb) instructions / cheapest "
                         "peer's"}
    return figures


def _time_between_invokes(plain: Invoke, replay: Invoke, n: int) -> tuple[int, int]:
    """Time ``replay`` alone, each call right after an untimed invoke of the chain, so
    that the SDK runs with the caches in the state the chain leaves them, as it does
    inside a handler; a tight loop of ``replay`` keeps them warm and flatters it."""
    wall = cpu = 0
    for _ in range(n):
        plain()
        w, c = time.perf_counter_ns(), time.process_time_ns()
        replay()
        cpu += time.process_time_ns() - c
        wall += time.perf_counter_ns() - w
    return wall, cpu


class Worker:
    """Configurations served by one process. The peers patch LangChain for good
    (OpenLLMetry's ``uninstrument`` leaves its handler in place), so each has a
    process of its own; the others share one, so that base, (a), (b) and the floor are
    compared within one process. The processes take turns, so the measurements
    interleave."""

    def __init__(self, names: list[str], shape: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", ",".join(names), "--shape", shape],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"worker for {names} failed to start")

    def block(self, name: str, n: int) -> tuple[float, float, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{name} {n}\n")
        self.proc.stdin.flush()
        wall, cpu, spans = self.proc.stdout.readline().split()
        return float(wall), float(cpu), float(spans)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def available(name: str) -> bool:
    return importable({"c": "openinference.instrumentation.langchain",
              "d": "opentelemetry.instrumentation.langchain"}.get(name))


def measure(names: list[str], rounds: int, invokes: int, shape: str
            ) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, float]]:
    """Per-round block means (µs, wall and process CPU); every round runs every
    configuration once, in shuffled order."""
    peers = [n for n in names if n in ("c", "d")]
    shared = Worker([n for n in names if n not in peers], shape)
    workers = {n: shared for n in names if n not in peers}
    workers.update({n: Worker([n], shape) for n in peers})
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    spans: dict[str, float] = {}
    order = list(names)
    try:
        for r in range(rounds):
            random.shuffle(order)
            for name in order:
                w, c, spans[name] = workers[name].block(name, invokes)
                wall[name].append(w)
                cpu[name].append(c)
            print(f"  round {r + 1}/{rounds} (CPU µs): " + "  ".join(
                f"{n}={cpu[n][-1]:.0f}" for n in names), file=sys.stderr, flush=True)
    finally:
        for worker in {id(w): w for w in workers.values()}.values():
            worker.close()
    return wall, cpu, spans


def memory_check(invokes: int, shape: str) -> int:
    build, request = SHAPES[shape]
    app = build()
    handler = RagasCallbackHandler(discarding_provider())
    config: Any = {"callbacks": [handler]}
    for _ in range(1000):
        app.invoke(request, config=config)
    gc.collect()
    before = rss_mib()
    for _ in range(invokes):
        app.invoke(request, config=config)
    gc.collect()
    print(f"{before} {rss_mib()} {handler.open_runs}", flush=True)
    return 0


def report(title: str, samples: dict[str, list[float]], spans_per_invoke: dict[str, float]
           ) -> dict[str, float]:
    """Print the comparison; returns the added costs (µs) and the floor."""
    added = added_costs(samples, ("spans", "spans_app"))
    bare = statistics.median(samples["spans"])
    bare_app = statistics.median(samples["spans_app"])
    floor = added["a"] + bare
    floor_app = added["a"] + bare_app
    print(f"\n== {title} ==")
    print(f"base invoke (no callbacks): median {statistics.median(samples['base']):.0f} µs")
    print(f"{LABELS['spans']}: {bare:.0f} µs")
    print(f"{LABELS['spans_app']}: {bare_app:.0f} µs")
    for name, cost in added.items():
        print(f"{LABELS[name]}: +{cost:.0f} µs = {cost / floor:.2f} F "
              f"[{spans_per_invoke[name]:.0f} spans/invoke]")
    print(f"floor F = (a) + bare spans = {floor:.0f} µs; "
          f"F_app = (a) + bare spans after an invoke = {floor_app:.0f} µs")
    ours = added["b"]
    print_floor_ratio("F", ours, floor)
    print_floor_ratio("F_app", ours, floor_app)
    if "lb" in added:
        print(f"(lb) / F = {added['lb'] / floor:.2f}: what any handler making these spans "
              f"pays at least; (b) / (lb) = {ours / added['lb']:.2f}")
    print_peer_ratios(ours, added)
    return {**added, "floor": floor, "base": statistics.median(samples["base"])}


def figures_of(shape: str, cpu: dict[str, float]) -> dict[str, dict[str, Any]]:
    """The CPU-time figures of one shape, for bench/results/langchain_overhead.json."""
    figures: dict[str, dict[str, Any]] = {
        f"{shape}.base_us": {"value": round(cpu["base"]), "unit": "µs",
                             "label": f"{SHAPE_TITLES[shape]}: invoke with no callbacks (CPU)"},
        f"{shape}.ragas_trace_added_us": {
            "value": round(cpu["b"]), "unit": "µs", "baseline": "no callbacks",
            "label": f"{SHAPE_TITLES[shape]}: added by RagasCallbackHandler (CPU per invoke)"},
        f"{shape}.floor_ratio": {
            "value": round(cpu["b"] / cpu["floor"], 2), "target": "<= 1.3",
            "baseline": "no-op handler + the same spans on the bare SDK",
            "label": f"{SHAPE_TITLES[shape]}: ragas-trace cost / floor"},
    }
    peers = {"c": "openinference", "d": "openllmetry"}
    for name, peer in peers.items():
        if name in cpu:
            figures[f"{shape}.{peer}_added_us"] = {
                "value": round(cpu[name]), "unit": "µs", "baseline": "no callbacks",
                "label": f"{SHAPE_TITLES[shape]}: added by {LABELS[name][4:]} (CPU per invoke)"}
    measured = [cpu[n] for n in peers if n in cpu]
    if measured:
        figures[f"{shape}.peer_ratio"] = {
            "value": round(cpu["b"] / min(measured), 3), "target": "<= 0.2",
            "baseline": "the cheaper of OpenInference and OpenLLMetry",
            "label": f"{SHAPE_TITLES[shape]}: ragas-trace cost / cheapest peer's"}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60,
                        help="timed rounds; 0: only the memory check")
    parser.add_argument("--invokes", type=int, default=20, help="invokes per timed block")
    parser.add_argument("--rss-invokes", type=int, default=100_000)
    parser.add_argument("--rss-bound-mib", type=float, default=20.0,
                        help="RSS growth allowed over the memory check")
    parser.add_argument("--shapes", default="chain,agent",
                        help=f"comma-separated, of: {', '.join(SHAPES)}")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write bench/results/langchain_overhead.json")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--count", help=argparse.SUPPRESS)
    parser.add_argument("--shape", default="chain", help=argparse.SUPPRESS)
    parser.add_argument("--memory", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return run_worker(args.worker.split(","), args.shape)
    if args.memory is not None:
        return memory_check(args.memory, args.shape)
    if args.count:
        return run_count(args.count, args.shape, args.invokes)
    shapes = args.shapes.split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        parser.error(f"unknown shape(s): {', '.join(unknown)}")

    names = [n for n in CONFIGS if available(n)]
    missing = [LABELS[n] for n in CONFIGS if n not in names]
    if missing:
        print("not installed, skipped: " + "; ".join(missing) + " (pip install -e '.[bench]')")
    figures: dict[str, dict[str, Any]] = {}
    for shape in shapes:
        if args.instructions:
            figures.update(report_instructions(
                shape, measure_instructions(names, shape, args.invokes)))
            continue
        if args.rounds == 0:  # the memory check alone
            figures.update(memory_figures(shape, args.rss_invokes, args.rss_bound_mib))
            continue
        print(f"\n#### shape: {shape} -- {args.rounds} rounds x {args.invokes} invokes per "
              "configuration, interleaved, each peer in its own process")
        wall, cpu, spans = measure(names, args.rounds, args.invokes, shape)
        cpu_costs = report("process CPU time per invoke (all threads; not charged for other "
                           "processes)", cpu, spans)
        report("wall time per invoke", wall, spans)
        figures.update(figures_of(shape, cpu_costs))
        if args.rss_invokes > 0:
            figures.update(memory_figures(shape, args.rss_invokes, args.rss_bound_mib))
    if not args.no_save:  # a run of one shape or mode keeps the others' figures
        print(f"figures written to {write_results('langchain_overhead', figures, merge=True)}")
    return 0


def memory_figures(shape: str, invokes: int, bound_mib: float) -> dict[str, dict[str, Any]]:
    out = subprocess.run([sys.executable, __file__, "--memory", str(invokes), "--shape", shape],
                         check=True, capture_output=True, text=True).stdout.split()
    before, after, open_runs = float(out[0]), float(out[1]), int(out[2])
    growth = after - before
    print(f"\nmemory ({shape}): {invokes:,} invokes through (b): RSS {before:.1f} MiB -> "
          f"{after:.1f} MiB ({growth:+.1f} MiB, bound {bound_mib:.0f} MiB: "
          f"{'met' if growth <= bound_mib else 'NOT met'}); open runs after: {open_runs}")
    return {f"{shape}.rss_growth_mib": {
        "value": round(growth, 1), "unit": "MiB", "target": f"<= {bound_mib:g}",
        "baseline": "RSS after 1,000 warm-up invokes",
        "label": f"{shape}: RSS growth over {invokes:,} invokes through RagasCallbackHandler "
                 f"({open_runs} runs open after)"}}


if __name__ == "__main__":
    sys.exit(main())
