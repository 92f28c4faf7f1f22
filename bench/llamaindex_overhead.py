"""Added cost per request of LlamaIndex tracing, on an in-memory RAG query engine and a
RAG agent, interleaved.

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
dropped unread, and 50,000 agent requests; RSS before and after, and the requests
still open. The memory checks run in processes of their own, beside the timing.

Shapes (``--shapes``, each measured and reported on its own):
  query  ``VectorStoreIndex`` over 4 nodes with ``MockEmbedding``, top-2 retrieval,
         ``MockLLM`` (the same work for every configuration; no network)
  agent  a ``FunctionAgent`` (llama-index-core's ``MockFunctionCallingLLM`` replying from
         a script) with one ``RetrieverTool`` over the same index: two model calls (the
         tool call, then the answer) and one retrieval per request, run on one event loop
The memory check then runs 50,000 agent requests through (b) as well.

Run by hand, in the venv that has the peers (kept out of the test venv):

    python3 -m venv .venv-bench && .venv-bench/bin/pip install -e '.[bench]'
    .venv-bench/bin/python bench/llamaindex_overhead.py   # ~20 minutes on 2 busy cores
    .venv-bench/bin/python bench/llamaindex_overhead.py --rss-queries 0 --rounds 5
    .venv-bench/bin/python bench/llamaindex_overhead.py --shapes agent --rss-queries 0
    .venv-bench/bin/python bench/llamaindex_overhead.py --instructions --queries 20

``--instructions`` counts instructions instead of timing, as bench/langchain_overhead.py
does: each configuration runs ``--queries`` warm requests in a process of its own under
valgrind's callgrind (only those requests are counted). Counts do not move with the
machine's load, so they give steady ratios on a shared machine; they weigh every
instruction the same, where time does not (cache misses, syscalls).

The machine is shared and noisy (2 cores, many processes), so the configurations run
in ONE process and take turns every few queries: all the handler sets are installed
once, captured, and swapped onto the root dispatcher before each block (two list
assignments, the same for every configuration). The peers only add dispatcher
handlers (checked: no monkey-patching), so swapping the lists fully switches them on
and off. Figures are medians over rounds of per-round differences against ``base``
measured in the same round, in process CPU time and in wall time. Each mode merges
its figures into bench/results/llamaindex_overhead.json (the other mode's stay).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.schema import TextNode
from llama_index.core.tools import RetrieverTool
from llama_index_instrumentation import get_dispatcher
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

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
from ragas_trace.collectors import llamaindex
from results_file import write_results

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
Query = Callable[[], object]


def build_index() -> VectorStoreIndex:
    nodes = [TextNode(text=f"Passage {i}: Paris is the capital of France.", id_=f"kb-{i}",
                      metadata={"source": f"kb/{i}.md"}) for i in range(4)]
    return VectorStoreIndex(nodes=nodes, embed_model=MockEmbedding(embed_dim=8))


def build_engine(streaming: bool = False) -> BaseQueryEngine:
    return build_index().as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=2,
                                         streaming=streaming)


def _agent_reply(messages: Any, **kwargs: Any) -> ChatMessage:
    """First turn: call the retrieval tool; once its result is in: answer."""
    if any(m.role == MessageRole.TOOL for m in messages):
        return ChatMessage(role="assistant", content=ANSWER)
    return ChatMessage(role="assistant", blocks=[ToolCallBlock(
        tool_call_id="call-0", tool_name="knowledge_base", tool_kwargs={"input": QUESTION})])


def build_agent() -> FunctionAgent:
    tool = RetrieverTool.from_defaults(build_index().as_retriever(similarity_top_k=2),
                                       name="knowledge_base",
                                       description="Looks up facts about countries.")
    return FunctionAgent(tools=[tool], llm=MockFunctionCallingLLM(
        response_generator=_agent_reply, is_chat_model=True))


def agent_call(agent: FunctionAgent, loop: asyncio.AbstractEventLoop) -> Query:
    async def once() -> object:
        return await agent.run(user_msg=QUESTION)

    return lambda: loop.run_until_complete(once())


def shape_call(shape: str) -> Query:
    """One request of the shape, as a call (the agent's on an event loop of its own)."""
    if shape == "agent":
        return agent_call(build_agent(), asyncio.new_event_loop())
    engine = build_engine()
    return lambda: engine.query(QUESTION)


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


_INSTALLED: dict[str, Handlers] = {}


def _installed(name: str, shape: str) -> Handlers:
    """The handler lists configuration ``name`` leaves on the root dispatcher. Installed
    once per process (the peers' instrumentors refuse a second ``instrument()``), except
    (e), which replays the spans of the shape measured."""
    key = f"{name}:{shape}" if name == "e" else name
    if key not in _INSTALLED:
        _INSTALLED[key] = _install(partial(INSTALLERS[name], shape))
    return _INSTALLED[key]


def _install(install: Callable[[], object]) -> Handlers:
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


def captured_spans(call: Query) -> Any:
    """The spans our handlers make for one request."""
    memory = InMemorySpanExporter()
    capture = TracerProvider()
    capture.add_span_processor(SimpleSpanProcessor(memory))
    installation = llamaindex.instrument(capture)
    call()
    installation.uninstrument()
    return memory.get_finished_spans()


def bare_spans(call: Query) -> Query:
    """The spans our handlers make for one request, replayed straight on the SDK."""
    return span_replay(captured_spans(call))


class SameSpansInPlace(NoopSpanHandler):
    """Diagnostic (e): the spans (b) makes, with their attributes computed beforehand,
    made where (b) makes them (in one burst when the query returns) and with no
    bookkeeping at all (it knows this one engine's span names). Compared with
    ``spans`` it shows what the same SDK calls cost inside a running application
    rather than in a tight loop; compared with (b) it shows (b)'s own work."""

    captured: Any = None

    def span_exit(self, id_: str, bound_args: inspect.BoundArguments, instance: Any = None,
                  result: Any = None, **kwargs: Any) -> None:
        tracer, root_name, root_attrs, children = self.captured
        if id_.startswith(root_name) and id_[len(root_name)] == "-":
            root = tracer.start_span(root_name, attributes=root_attrs)
            ctx = trace.set_span_in_context(root)
            for name, attrs in children:
                tracer.start_span(name, ctx, attributes=attrs).end()
            root.end()


def install_same_spans_in_place(shape: str) -> None:
    finished = captured_spans(shape_call(shape))
    root = next(s for s in finished if s.parent is None)
    children = [(s.name, dict(s.attributes or {})) for s in finished if s.parent is not None]
    handler = SameSpansInPlace()
    handler.captured = (discarding_provider().get_tracer("bench"), root.name,
                        dict(root.attributes or {}), children)
    dispatcher = get_dispatcher()
    dispatcher.add_span_handler(handler)
    dispatcher.add_event_handler(NoopEventHandler())


INSTALLERS: dict[str, Callable[[str], None]] = {
    "a": lambda shape: install_noop(),
    "b": lambda shape: install_ours(),
    "c": lambda shape: install_openinference(),
    "d": lambda shape: install_openllmetry(),
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


def measure(names: list[str], rounds: int, queries: int, shape: str
            ) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, float]]:
    """Per-round block means (µs, wall and process CPU); every round runs every
    configuration once, in shuffled order."""
    request = shape_call(shape)
    dispatcher = get_dispatcher()
    lists: dict[str, Handlers] = {
        "base": (list(dispatcher.span_handlers), list(dispatcher.event_handlers))}
    for name in names:
        if name in INSTALLERS:
            lists[name] = _installed(name, shape)
    calls: dict[str, Query] = dict.fromkeys(lists, request)
    calls["spans"] = bare_spans(request)
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


def run_count(name: str, shape: str, n: int) -> int:
    """One configuration's ``n`` counted requests, after a warm-up (``--instructions``):
    its handlers installed for good, as nothing else runs in this process."""
    request = shape_call(shape)
    call = bare_spans(request) if name == "spans" else request
    if name in INSTALLERS:
        INSTALLERS[name](shape)
    for _ in range(20):
        call()
    gc.collect()
    run_counted(call, n)
    return 0


def measure_instructions(names: list[str], shape: str, n: int) -> dict[str, float]:
    """Instructions per request of each configuration (``spans``: per replay), two
    valgrind processes at a time."""
    def count(name: str) -> float:
        command = [sys.executable, __file__, "--count", name, "--memory-shape", shape,
                   "--queries", str(n)]
        return count_instructions(command) / n

    counted = ["base", *names, "spans"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        per_request = dict(zip(counted, pool.map(count, counted), strict=True))
    for name, value in per_request.items():
        print(f"  {shape} {name}: {value:,.0f} instructions per request", file=sys.stderr)
    return per_request


def report_instructions(shape: str, per_request: dict[str, float]) -> dict[str, dict[str, Any]]:
    what = "query engine query" if shape == "query" else "FunctionAgent request"
    base = per_request["base"]
    added = {n: v - base for n, v in per_request.items() if n not in ("base", "spans")}
    floor = added["a"] + per_request["spans"]
    print(f"\n== {shape}: instructions per request (callgrind) ==")
    print(f"base request (no handlers): {base:,.0f}")
    print(f"{LABELS['spans']}: {per_request['spans']:,.0f}")
    for name, cost in added.items():
        print(f"{LABELS[name]}: +{cost:,.0f} = {cost / floor:.2f} F")
    print_floor_ratio("F", added["b"], floor)
    print_peer_ratios(added["b"], added)
    floor_label = "no-op handler pair + the same spans on the bare SDK"
    figures: dict[str, dict[str, Any]] = {
        f"{shape}.instructions.ours_added": {
            "value": round(added["b"]), "unit": "instructions", "exact": True,
            "baseline": f"{base:,.0f} with no handlers",
            "label": f"{what}: instructions ragas-trace adds per request"},
        f"{shape}.instructions.floor_ratio": {
            "value": round(added["b"] / floor, 2), "target": "<= 1.3", "exact": True,
            "baseline": floor_label,
            "label": f"{what}: ragas-trace instructions / floor's"}}
    peers = {n: added[n] for n in ("c", "d") if n in added}
    if peers:
        cheaper = min(peers.values())
        figures[f"{shape}.instructions.peer_ratio"] = {
            "value": round(added["b"] / cheaper, 3), "target": "<= 0.2", "exact": True,
            "baseline": "the cheaper of OpenInference and OpenLLMetry, instructions per request",
            "label": f"{what}: ragas-trace instructions / cheapest peer's"}
        if "e" in added:
            # (e) makes the same spans with no bookkeeping: near the best any handler
            # making these spans could do against the same peer.
            figures[f"{shape}.instructions.same_spans_peer_ratio"] = {
                "value": round(added["e"] / cheaper, 3), "exact": True,
                "baseline": "the cheaper of OpenInference and OpenLLMetry, instructions per "
                            "request",
                "label": f"{what}: diagnostic (e), the same spans with no bookkeeping, "
                         "instructions / cheapest peer's"}
    return figures


def memory_check(queries: int, shape: str) -> int:
    installation = llamaindex.instrument(discarding_provider())
    if shape == "agent":
        agent_run = shape_call("agent")

        def one(i: int) -> None:
            agent_run()
    else:
        engine, streaming = build_engine(), build_engine(streaming=True)

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
           ) -> dict[str, float]:
    """Prints the report; returns the added costs (µs) and the floor ``F``."""
    added = added_costs(samples, ("spans",))
    bare = statistics.median(samples["spans"])
    floor = added["a"] + bare
    print(f"\n== {title} ==")
    print(f"base request (no handlers): median {statistics.median(samples['base']):.0f} µs")
    print(f"{LABELS['spans']}: {bare:.0f} µs")
    for name, cost in added.items():
        print(f"{LABELS[name]}: +{cost:.0f} µs = {cost / floor:.2f} F "
              f"[{spans_per_query[name]:.0f} spans/request]")
    print(f"floor F = (a) + bare spans = {floor:.0f} µs")
    ours = added["b"]
    print_floor_ratio("F", ours, floor)
    if "e" in added:
        print(f"(b) - (e) = {ours - added['e']:.0f} µs: (b)'s bookkeeping and attribute "
              f"building; (e) - (a) = {added['e'] - added['a']:.0f} µs: the same spans made "
              f"inside the application, vs {bare:.0f} µs in a tight loop; "
              f"(b) / (e) = {ours / added['e']:.2f}")
    print_peer_ratios(ours, added)
    return {**added, "floor": floor, "base": statistics.median(samples["base"])}


def figures_of(shape: str, cpu: dict[str, float]) -> dict[str, dict[str, Any]]:
    """The CPU-time figures of one shape, for ``bench/results/llamaindex_overhead.json``.
    The floor ratio stays in the printed report only: its denominator, (a) + bare
    spans, is a difference of two noisy medians and comes out near zero or negative on
    a busy machine."""
    what = "query engine query" if shape == "query" else "FunctionAgent request"
    figures: dict[str, dict[str, Any]] = {
        f"{shape}_base_us": {"value": round(cpu["base"], 1), "unit": "µs",
                             "label": f"{what} with no handlers (CPU time)"},
        f"{shape}_ours_added_us": {"value": round(cpu["b"], 1), "unit": "µs",
                                   "label": f"ragas-trace's added CPU time per {what}"},
    }
    peers = {n: cpu[n] for n in ("c", "d") if n in cpu}
    for name, label in (("c", "OpenInference"), ("d", "OpenLLMetry")):
        if name in peers:
            figures[f"{shape}_{label.lower()}_added_us"] = {
                "value": round(peers[name], 1), "unit": "µs",
                "label": f"{label}'s added CPU time per {what}"}
    if peers:
        figures[f"{shape}_ours_over_cheapest_peer"] = {
            "value": round(cpu["b"] / min(peers.values()), 3), "target": "<= 0.2",
            "baseline": "the cheaper of OpenInference and OpenLLMetry",
            "label": f"{what}: ours / cheapest peer (CPU time)"}
    return figures


def start_memory_check(shape: str, requests: int) -> subprocess.Popen[str]:
    """The memory check of one shape, in a process of its own (run while the timing
    runs: the timing's figures are differences within each round, so a neighbour
    process costs them noise, not bias)."""
    return subprocess.Popen([sys.executable, __file__, "--memory", str(requests),
                             "--memory-shape", shape], stdout=subprocess.PIPE, text=True)


def memory_figures(shape: str, check: subprocess.Popen[str], requests: int, bound: float
                   ) -> dict[str, dict[str, Any]]:
    stdout, _ = check.communicate()
    if check.returncode != 0:
        raise RuntimeError(f"the {shape} memory check failed ({check.returncode})")
    out = stdout.split()
    before, after = float(out[0]), float(out[1])
    open_runs, open_spans, evicted = int(out[2]), int(out[3]), int(out[4])
    growth = after - before
    what = ("queries (1 in 10 a stream abandoned after one token, 1 in 50 a stream "
            "dropped unread)" if shape == "query" else "FunctionAgent requests")
    print(f"\nmemory: {requests:,} {what} through (b): RSS {before:.1f} MiB -> "
          f"{after:.1f} MiB ({growth:+.1f} MiB, bound {bound:.0f} MiB: "
          f"{'met' if growth <= bound else 'NOT met'}); open requests after: {open_runs}, "
          f"mapped spans: {open_spans}, evicted: {evicted}")
    return {f"{shape}_rss_growth_mib": {
        "value": round(growth, 1), "unit": "MiB", "target": f"<= {bound:g}",
        "label": f"RSS growth over {requests:,} {what} through ragas-trace"},
        f"{shape}_open_requests_after": {
            "value": open_runs, "label": f"requests still open after the {shape} memory run"}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--queries", type=int, default=5, help="requests per timed block")
    parser.add_argument("--shapes", default="query,agent",
                        help="comma-separated: query, agent")
    parser.add_argument("--rss-queries", type=int, default=50_000,
                        help="requests of each shape in the memory check")
    parser.add_argument("--rss-bound-mib", type=float, default=20.0,
                        help="RSS growth allowed over the memory check")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind instead of timing (no "
                             "memory check)")
    parser.add_argument("--memory", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--memory-shape", default="query", help=argparse.SUPPRESS)
    parser.add_argument("--count", help=argparse.SUPPRESS)
    parser.add_argument("--no-results", action="store_true",
                        help="do not write bench/results/llamaindex_overhead.json")
    args = parser.parse_args(argv)
    if args.memory is not None:
        return memory_check(args.memory, args.memory_shape)
    if args.count:
        return run_count(args.count, args.memory_shape, args.queries)
    shapes = [s for s in args.shapes.split(",") if s]
    unknown = set(shapes) - {"query", "agent"}
    if unknown:
        parser.error(f"unknown shapes: {', '.join(sorted(unknown))}")

    names = [n for n in INSTALLERS if available(n)]
    missing = [LABELS[n] for n in INSTALLERS if n not in names]
    if missing:
        print("not installed, skipped: " + "; ".join(missing) + " (pip install -e '.[bench]')")
    figures: dict[str, dict[str, Any]] = {}
    if args.instructions:
        for shape in shapes:
            figures.update(report_instructions(
                shape, measure_instructions(names, shape, args.queries)))
        if not args.no_results:
            write_results("llamaindex_overhead", figures, merge=True)
        return 0
    checks = ({shape: start_memory_check(shape, args.rss_queries) for shape in shapes}
              if args.rss_queries > 0 else {})
    for shape in shapes:
        print(f"\n##### shape: {shape}: {args.rounds} rounds x {args.queries} requests per "
              "configuration, interleaved in one process")
        wall, cpu, spans = measure(names, args.rounds, args.queries, shape)
        cpu_costs = report(f"{shape}: process CPU time per request (all threads; not "
                           "charged for other processes)", cpu, spans)
        report(f"{shape}: wall time per request", wall, spans)
        figures.update(figures_of(shape, cpu_costs))
    for shape, check in checks.items():
        figures.update(memory_figures(shape, check, args.rss_queries, args.rss_bound_mib))
    if not args.no_results:
        write_results("llamaindex_overhead", figures, merge=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
