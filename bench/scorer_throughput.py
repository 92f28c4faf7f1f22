"""Background scorer throughput and the app's latency with scoring on vs off.

1. Throughput. The loopback OpenAI server (in a subprocess, so its threads do not
   share our GIL) answers every call after a fixed latency L; our OpenAI judge
   needs two sequential rounds per record, so C records at a time can at best
   be scored at C / (2 L) records/s. We push N distinct records through the
   ``BackgroundScorer`` (concurrency C) and report records/s against that ideal,
   and against a baseline measured in the same run: the same judge driven by a
   bare ``asyncio.gather`` under a semaphore of C. Runs alternate, repeated;
   medians.
2. App latency. One LangChain RAG chain (fixed retriever, fake chat model) with
   our callback handler, on two TracerProviders in the same process: "on" has
   ``ragas_trace.setup()`` scoring every request with the slow judge, "off" has
   only an exporting processor. Requests alternate on/off at a steady pace
   while the judge is busy; the ratio of median latencies is reported. Both
   conditions share the process, so this isolates what scoring adds to the
   request path; the judge's background CPU shows in both.

    python bench/scorer_throughput.py [--latency-ms 500] [--concurrency 16]
        [--records 160] [--repeats 3] [--rounds 5] [--pairs 100] [--rate 40]
        [--judge loopback|scripted] [--json]

Targets (issue 5): throughput >= 90 % of ideal; app latency on within 5 % of off.
With the loopback judge it writes its figures to bench/results/scorer_throughput.json,
with every repeat's (and every round's) value.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.judges.base import Judge
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.record import Context, RagRecord
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome
from ragas_trace.testing.scripted_judge import ScriptedJudge
from results_file import repeated, write_results

# The listen backlog is raised from socketserver's 5: C records open up to 4 C
# connections at once, and a real API endpoint would not refuse them.
SERVER = """
import sys, http.server
http.server.ThreadingHTTPServer.request_queue_size = 512
from ragas_trace.testing.openai_server import FakeOpenAIServer
server = FakeOpenAIServer(latency_s=float(sys.argv[1])).start()
print(server.base_url, flush=True)
sys.stdin.read()
"""

PASSAGE = ("The Marrowick lighthouse was built in {i} by the harbour guild. "
           "It stands on the northern breakwater and is painted red and white.")


def record(i: int) -> RagRecord:
    return RagRecord(f"When was lighthouse number {i} built?", (Context(PASSAGE.format(i=i)),),
                     f"Lighthouse number {i} was built in {i} by the harbour guild.")


def make_judge(base_url: str, scripted_latency_s: float | None = None) -> Judge:
    """The OpenAI judge on the loopback server, or (``--judge scripted``) a judge that
    only sleeps 2 L: the scorer's own overhead without the HTTP client's CPU."""
    if scripted_latency_s is not None:
        return ScriptedJudge(delay_s=2 * scripted_latency_s)
    return OpenAIJudge(base_url=base_url, api_key="bench", cache=False, max_retries=2,
                       timeout_s=30)


def run_scorer(base_url: str, records: list[RagRecord], concurrency: int,
               scripted: float | None) -> tuple[float, Counter[str]]:
    scorer = BackgroundScorer(make_judge(base_url, scripted), concurrency=concurrency,
                              queue_size=len(records) + 1, timeout_s=60)
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def done(_: RagRecord | None, outcome: Outcome) -> None:
        key = str(outcome.status) if outcome.status is EvaluationStatus.SCORED else (
            f"{outcome.status}:{outcome.reason}")
        with lock:
            outcomes[key] += 1

    start = time.perf_counter()
    for r in records:
        if not scorer.submit(r, done):
            raise RuntimeError("queue full: raise queue_size")
    if not scorer.drain(600):
        raise RuntimeError("scorer did not drain")
    elapsed = time.perf_counter() - start
    scorer.shutdown(5)
    return len(records) / elapsed, outcomes


def run_gather(base_url: str, records: list[RagRecord], concurrency: int,
               scripted: float | None) -> float:
    async def main() -> float:
        judge = make_judge(base_url, scripted)
        semaphore = asyncio.Semaphore(concurrency)

        async def one(r: RagRecord) -> None:
            async with semaphore:
                await judge.evaluate(r.question, r.context_texts, r.answer)

        start = time.perf_counter()
        await asyncio.gather(*(one(r) for r in records))
        elapsed = time.perf_counter() - start
        await judge.aclose()
        return len(records) / elapsed

    return asyncio.run(main())


def build_chain() -> Any:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    class Passages(BaseRetriever):
        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun
                                    ) -> list[Document]:
            return [Document(page_content=PASSAGE.format(i=k), id=str(k)) for k in range(3)]

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    model = FakeListChatModel(responses=["The lighthouse was built in 1 by the guild."])
    return ({"context": Passages() | (lambda docs: "\n".join(d.page_content for d in docs)),
             "question": RunnablePassthrough()} | prompt | model | StrOutputParser())


def app_latency(base_url: str, concurrency: int, rounds: int, pairs: int, rate: float,
                scripted: float | None) -> dict[str, Any]:
    chain = build_chain()
    rt = ragas_trace.setup(service_name="bench", judge=make_judge(base_url, scripted),
                           tracer_provider=TracerProvider(), exporter=InMemorySpanExporter(),
                           concurrency=concurrency, queue_size=rounds * pairs + 10,
                           hold_timeout_s=600)
    off_provider = TracerProvider()
    off_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    handlers = {"on": rt.langchain_handler(app_name="bench"),
                "off": rt.langchain_handler(app_name="bench", tracer_provider=off_provider)}
    for name in ("on", "off"):  # warm up both paths
        chain.invoke("warm up?", config={"callbacks": [handlers[name]]})
    all_ms: dict[str, list[float]] = {"on": [], "off": []}
    ratios: list[float] = []
    backlog: list[int] = []
    interval = 1.0 / rate
    for round_no in range(rounds):
        ms: dict[str, list[float]] = {"on": [], "off": []}
        next_at = time.perf_counter()
        for i in range(pairs):
            order = ("on", "off") if i % 2 == 0 else ("off", "on")
            for name in order:
                start = time.perf_counter()
                chain.invoke(f"When was lighthouse number {round_no}-{i} built?",
                             config={"callbacks": [handlers[name]]})
                ms[name].append((time.perf_counter() - start) * 1000)
            next_at += interval
            time.sleep(max(0.0, next_at - time.perf_counter()))
        ratios.append(statistics.median(ms["on"]) / statistics.median(ms["off"]))
        backlog.append(rt.pipeline.scorer.pending)
        for name in ms:
            all_ms[name].extend(ms[name])
    rt.shutdown(timeout_s=1)
    off_provider.shutdown()
    return {"on_median_ms": statistics.median(all_ms["on"]),
            "off_median_ms": statistics.median(all_ms["off"]),
            "on_over_off": statistics.median(ratios), "round_ratios": ratios,
            "judge_backlog_per_round": backlog}


def figures(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The figures of ``bench/results/scorer_throughput.json``, each with its runs (the
    repeats, or the app-latency rounds): a target is met only if every run clears it."""
    setting = f"L = {result['latency_s']:g} s, C = {result['concurrency']}"
    ideal = result["ideal_records_per_s"]
    scorer, gather = result["scorer_runs"], result["gather_runs"]
    return {
        "records_per_s": {**repeated(scorer, 2), "unit": "records/s",
                          "label": f"Background scorer, loopback OpenAI judge, {setting}"},
        "of_ideal": {**repeated([r / ideal for r in scorer], 3),
                     "label": f"Background scorer / ideal C/(2L) = {ideal:g} records/s",
                     "baseline": "C/(2L)", "target": ">= 0.90"},
        "scorer_vs_gather": {**repeated([s / g for s, g in zip(scorer, gather, strict=True)], 3),
                             "label": "Background scorer / a bare asyncio.gather of the same "
                                      "judge (paired repeats)",
                             "baseline": f"gather: {result['gather_records_per_s']:.2f} "
                                         "records/s (median)"},
        "app_latency_ratio": {**repeated(result["round_ratios"], 3),
                              "label": "App latency, scoring on / off, judge backlogged "
                                       "(median latency of each round)",
                              "baseline": "scoring off, same process, interleaved",
                              "target": "within 5 %"},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--records", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5, help="app latency rounds")
    parser.add_argument("--pairs", type=int, default=100, help="on/off pairs per round")
    parser.add_argument("--rate", type=float, default=40.0, help="request pairs per second")
    parser.add_argument("--judge", choices=("loopback", "scripted"), default="loopback")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    scripted = latency if args.judge == "scripted" else None
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(latency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        ideal = args.concurrency / (2 * latency)
        scorer_rates: list[float] = []
        gather_rates: list[float] = []
        outcomes: Counter[str] = Counter()
        for rep in range(args.repeats):
            batch = [record(rep * args.records + i) for i in range(args.records)]
            runs = [("scorer", scorer_rates), ("gather", gather_rates)]
            for name, rates in (runs if rep % 2 == 0 else runs[::-1]):
                if name == "scorer":
                    rate, counted = run_scorer(base_url, batch, args.concurrency, scripted)
                    outcomes.update(counted)
                else:
                    rate = run_gather(base_url, batch, args.concurrency, scripted)
                rates.append(rate)
        scorer_rate = statistics.median(scorer_rates)
        gather_rate = statistics.median(gather_rates)
        latency_result = app_latency(base_url, args.concurrency, args.rounds, args.pairs,
                                     args.rate, scripted)
    finally:
        server.terminate()
        server.wait(5)
    result = {
        "judge": args.judge, "latency_s": latency, "concurrency": args.concurrency,
        "records": args.records, "repeats": args.repeats, "ideal_records_per_s": ideal,
        "scorer_records_per_s": scorer_rate, "gather_records_per_s": gather_rate,
        "scorer_over_ideal": scorer_rate / ideal, "scorer_over_gather": scorer_rate / gather_rate,
        "scorer_runs": scorer_rates, "gather_runs": gather_rates,
        "scorer_outcomes": dict(outcomes), **latency_result,
    }
    if args.judge == "loopback":  # the configuration the docs quote
        write_results("scorer_throughput", figures(result))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.judge} judge, latency L = {latency:.3f} s per call, "
              f"concurrency C = {args.concurrency}")
        print(f"ideal C/(2L):        {ideal:7.2f} records/s")
        print(f"background scorer:   {scorer_rate:7.2f} records/s  "
              f"({scorer_rate / ideal:.1%} of ideal; runs {[round(r, 2) for r in scorer_rates]})")
        print(f"scorer outcomes:     {dict(outcomes)}")
        print(f"bare asyncio.gather: {gather_rate:7.2f} records/s  "
              f"(scorer/gather = {scorer_rate / gather_rate:.3f})")
        print(f"app latency median: on {latency_result['on_median_ms']:.3f} ms, "
              f"off {latency_result['off_median_ms']:.3f} ms; on/off median of rounds "
              f"{latency_result['on_over_off']:.3f} "
              f"(rounds {[round(r, 3) for r in latency_result['round_ratios']]}; "
              f"judge backlog {latency_result['judge_backlog_per_round']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
