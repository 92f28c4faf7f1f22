"""Added cost per query of LlamaIndex tracing, on one in-memory RAG query engine, interleaved.

Configurations (each timed over the same kind of engine, in shuffled order every round):
  base   no handlers beyond LlamaIndex's own null ones
  a      a no-op span handler + event handler pair on the root dispatcher
  b      ragas-trace's ``collectors.llamaindex.instrument()``
  c      openinference-instrumentation-llama-index
  d      OpenLLMetry's opentelemetry-instrumentation-llamaindex
  e      diagnostic: (b)'s spans with precomputed attributes, made where (b) makes
         them (one burst as the query returns) by a handler with no bookkeeping
  spans  the spans (b) makes, created and ended outside any framework
b, c, d, e and spans all export through the same ``SimpleSpanProcessor`` to an exporter
that discards. The floor is F = (a - base) + spans. Targets: b - base <= 1.3 F and
b - base <= min(c - base, d - base) / 5. Then the memory check: 50,000 queries through
(b), one in ten a stream the user abandons after one token and one in fifty a stream
dropped unread; RSS before and after, and the requests still open.

The engine: ``VectorStoreIndex`` over 4 nodes with ``MockEmbedding``, top-2 retrieval,
``MockLLM`` (the same work for every configuration; no network).

Run by hand, in the venv that has the peers (kept out of the test venv):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install -e '.[bench]'
    .venv-bench/bin/python bench/llamaindex_overhead.py             # ~4 minutes
    .venv-bench/bin/python bench/llamaindex_overhead.py --rss-queries 0 --rounds 5

The machine is shared and noisy (2 cores, many processes), so the configurations run
in ONE process and take turns every few queries: all the handler sets are installed
once, captured, and swapped onto the root dispatcher before each block (two list
assignments, the same for every configuration). The peers only add dispatcher
handlers (checked: no monkey-patching), so swapping the lists fully switches them on
and off. Figures are medians over rounds of per-round differences against ``base``
measured in the same round, in process CPU time and in wall time.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode
from llama_index_instrumentation import get_dispatcher
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from overhead_common import (
    DiscardExporter,
    added_costs,
    discarding_provider,
    importable,
    print_floor_ratio,
    print_peer_ratios,
    rss_mib,
    span_replay,
)
from ragas_trace.collectors import llamaindex

QUESTION = "What is the capital of France?"
Query = Callable[[], object]

def build_engine(streaming: bool = False) -> BaseQueryEngine:
    nodes = [TextNode(text=f"Passage {i}: Paris is the capital of France.", id_=f"kb-{i}",
                      metadata={"source": f"kb/{i}.md"}) for i in range(4)]
    index = VectorStoreIndex(nodes=nodes, embed_model=MockEmbedding(embed_dim=8))
    return index.as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2,
                                 streaming=streaming)


class NoopSpanHandler(BaseSpanHandler[BaseSpan]):
    """The cheapest span handler: what any dispatcher-based instrumentation pays at least."""

    def span_enter(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                   parent_id: str | None = None, tags: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
        return None

    def span_exit(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                  result: Any = None, **kwargs: Any) -> None:
        return None

    def span_drop(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                  err: BaseException | None = None, **kwargs: Any) -> None:
        return None

    def new_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        return None


class NoopEventHandler(BaseEventHandler):
    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        return None


# Configurations: each installs itself and returns the handler lists it leaves on the
# root dispatcher; the lists are then swapped in before each timed block.

Handlers = tuple[list[Any], list[Any]]


def _installed(install: Callable[[], object]) -> Handlers:
    dispatcher = get_dispatcher()
    before = (list(dispatcher.span_handlers), list(dispatcher.event_handlers))
    install()
    after = (list(dispatcher.span_handlers), list(dispatcher.event_handlers))
    dispatcher.span_handlers, dispatcher.event_handlers = before
    return after


def install_noop() -> None:
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(NoopSpanHandler())
    dispatcher.add_event_handler(NoopEventHandler())


def install_ours() -> None:
    llamaindex.instrument(discarding_provider())


def install_openinference() -> None:
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=discarding_provider())


def install_openllmetry() -> None:
    from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=discarding_provider())


def bare_spans(engine: BaseQueryEngine) -> Query:
    """The spans our handlers make for one query, replayed straight on the SDK."""
    memory = InMemorySpanExporter()
    capture = TracerProvider()
    capture.add_span_processor(SimpleSpanProcessor(memory))
    installation = llamaindex.instrument(capture)
    engine.query(QUESTION)
    installation.uninstrument()
    return span_replay(memory.get_finished_spans())


class SameSpansInPlace(NoopSpanHandler):
    """Diagnostic (e): the spans (b) makes, with their attributes computed beforehand,
    made where (b) makes them (in one burst when the query returns) and with no
    bookkeeping at all (it knows this one engine's span names). Compared with
    ``spans`` it shows what the same SDK calls cost inside a running application
    rather than in a tight loop; compared with (b) it shows (b)'s own work."""

    captured: Any = None

    def span_exit(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                  result: Any = None, **kwargs: Any) -> None:
        if id_.startswith("RetrieverQueryEngine.query-"):
            tracer, root_name, root_attrs, children = self.captured
            root = tracer.start_span(root_name, attributes=root_attrs)
            ctx = trace.set_span_in_context(root)
            for name, attrs in children:
                tracer.start_span(name, ctx, attributes=attrs).end()
            root.end()


def install_same_spans_in_place() -> None:
    memory = InMemorySpanExporter()
    capture = TracerProvider()
    capture.add_span_processor(SimpleSpanProcessor(memory))
    installation = llamaindex.instrument(capture)
    build_engine().query(QUESTION)
    installation.uninstrument()
    finished = memory.get_finished_spans()
    root = next(s for s in finished if s.parent is None)
    children = [(s.name, dict(s.attributes or {})) for s in finished if s.parent is not None]
    handler = SameSpansInPlace()
    handler.captured = (discarding_provider().get_tracer("bench"), root.name,
                        dict(root.attributes or {}), children)
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(handler)
    dispatcher.add_event_handler(NoopEventHandler())


INSTALLERS: dict[str, Callable[[], None]] = {
    "a": install_noop,
    "b": install_ours,
    "c": install_openinference,
    "d": install_openllmetry,
    "e": install_same_spans_in_place,
}
LABELS = {
    "a": "(a) no-op span+event handler pair",
    "b": "(b) ragas-trace collectors.llamaindex",
    "c": "(c) openinference-instrumentation-llama-index",
    "d": "(d) opentelemetry-instrumentation-llamaindex (OpenLLMetry)",
    "e": "(e) diagnostic: (b)'s spans, attributes precomputed, made where (b) makes them",
    "spans": "bare SDK spans (same spans, same attributes, no framework)",
}


def available(name: str) -> bool:
    return importable({"c": "openinference.instrumentation.llama_index",
              "d": "opentelemetry.instrumentation.llamaindex"}.get(name))


def measure(names: list[str], rounds: int, queries: int
            ) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, float]]:
    """Per-round block means (µs, wall and process CPU); every round runs every
    configuration once, in shuffled order."""
    engine = build_engine()
    dispatcher = get_dispatcher()
    lists: dict[str, Handlers] = {
        "base": (list(dispatcher.span_handlers), list(dispatcher.event_handlers))}
    for name in names:
        if name in INSTALLERS:
            lists[name] = _installed(INSTALLERS[name])
    calls: dict[str, Query] = {name: (lambda: engine.query(QUESTION)) for name in lists}
    calls["spans"] = bare_spans(engine)
    lists["spans"] = lists["base"]
    order = list(calls)
    wall: dict[str, list[float]] = {n: [] for n in order}
    cpu: dict[str, list[float]] = {n: [] for n in order}
    spans: dict[str, float] = dict.fromkeys(order, 0.0)
    for name in order:  # warm every path
        dispatcher.span_handlers, dispatcher.event_handlers = (list(x) for x in lists[name])
        for _ in range(20):
            calls[name]()
    for r in range(rounds):
        random.shuffle(order)
        for name in order:
            dispatcher.span_handlers, dispatcher.event_handlers = (list(x) for x in lists[name])
            call = calls[name]
            DiscardExporter.exported = 0
            w, c = time.perf_counter_ns(), time.process_time_ns()
            for _ in range(queries):
                call()
            c, w = time.process_time_ns() - c, time.perf_counter_ns() - w
            wall[name].append(w / queries / 1000)
            cpu[name].append(c / queries / 1000)
            spans[name] = DiscardExporter.exported / queries
        if (r + 1) % max(rounds // 10, 1) == 0:
            print(f"  round {r + 1}/{rounds} (CPU µs): " + "  ".join(
                f"{n}={cpu[n][-1]:.0f}" for n in sorted(order)), file=sys.stderr, flush=True)
    dispatcher.span_handlers, dispatcher.event_handlers = lists["base"]
    return wall, cpu, spans


def memory_check(queries: int) -> int:
    engine, streaming = build_engine(), build_engine(streaming=True)
    installation = llamaindex.instrument(discarding_provider())

    def one(i: int) -> None:
        if i % 50 == 0:
            streaming.query(QUESTION)  # dropped unread
        elif i % 10 == 0:
            next(iter(streaming.query(QUESTION).response_gen))  # abandoned after a token
        else:
            engine.query(QUESTION)

    for i in range(2000):
        one(i)
    gc.collect()
    before = rss_mib()
    for i in range(queries):
        one(i)
    gc.collect()
    print(f"{before} {rss_mib()} {installation.open_runs} {installation.tracker.open_spans} "
          f"{installation.evicted_runs}", flush=True)
    return 0


def report(title: str, samples: dict[str, list[float]], spans_per_query: dict[str, float]
           ) -> None:
    added = added_costs(samples, ("spans",))
    bare = statistics.median(samples["spans"])
    floor = added["a"] + bare
    print(f"\n== {title} ==")
    print(f"base query (no handlers): median {statistics.median(samples['base']):.0f} µs")
    print(f"{LABELS['spans']}: {bare:.0f} µs")
    for name, cost in added.items():
        print(f"{LABELS[name]}: +{cost:.0f} µs = {cost / floor:.2f} F "
              f"[{spans_per_query[name]:.0f} spans/query]")
    print(f"floor F = (a) + bare spans = {floor:.0f} µs")
    ours = added["b"]
    print_floor_ratio("F", ours, floor)
    if "e" in added:
        print(f"(b) - (e) = {ours - added['e']:.0f} µs: (b)'s bookkeeping and attribute "
              f"building; (e) - (a) = {added['e'] - added['a']:.0f} µs: the same spans made "
              f"inside the application, vs {bare:.0f} µs in a tight loop; "
              f"(b) / (e) = {ours / added['e']:.2f}")
    print_peer_ratios(ours, added)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--queries", type=int, default=5, help="queries per timed block")
    parser.add_argument("--rss-queries", type=int, default=50_000)
    parser.add_argument("--rss-bound-mib", type=float, default=20.0,
                        help="RSS growth allowed over the memory check")
    parser.add_argument("--memory", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.memory is not None:
        return memory_check(args.memory)

    names = [n for n in INSTALLERS if available(n)]
    missing = [LABELS[n] for n in INSTALLERS if n not in names]
    if missing:
        print("not installed, skipped: " + "; ".join(missing) + " (pip install -e '.[bench]')")
    print(f"{args.rounds} rounds x {args.queries} queries per configuration, interleaved "
          "in one process")
    wall, cpu, spans = measure(names, args.rounds, args.queries)
    report("process CPU time per query (all threads; not charged for other processes)",
           cpu, spans)
    report("wall time per query", wall, spans)

    if args.rss_queries > 0:
        out = subprocess.run([sys.executable, __file__, "--memory", str(args.rss_queries)],
                             check=True, capture_output=True, text=True).stdout.split()
        before, after = float(out[0]), float(out[1])
        open_runs, open_spans, evicted = int(out[2]), int(out[3]), int(out[4])
        growth = after - before
        print(f"\nmemory: {args.rss_queries:,} queries through (b) (1 in 10 a stream "
              f"abandoned after one token, 1 in 50 a stream dropped unread): RSS "
              f"{before:.1f} MiB -> {after:.1f} MiB ({growth:+.1f} MiB, bound "
              f"{args.rss_bound_mib:.0f} MiB: "
              f"{'met' if growth <= args.rss_bound_mib else 'NOT met'})"
              f"; open requests after: {open_runs}, mapped spans: {open_spans}, "
              f"evicted: {evicted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
