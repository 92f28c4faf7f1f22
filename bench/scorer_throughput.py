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
        [--records 160] [--repeats 3] [--requests 400] [--rate 40] [--json]

Targets (issue 5): throughput >= 90 % of ideal; app latency on within 5 % of off.
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
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.record import Context, RagRecord
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

SERVER = """
import sys, time
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


def make_judge(base_url: str) -> OpenAIJudge:
    return OpenAIJudge(base_url=base_url, api_key="bench", cache=False, max_retries=0,
                       timeout_s=30)


def run_scorer(base_url: str, records: list[RagRecord], concurrency: int) -> tuple[float, int]:
    scorer = BackgroundScorer(make_judge(base_url), concurrency=concurrency,
                              queue_size=len(records) + 1, timeout_s=60)
    scored = 0
    lock = threading.Lock()

    def done(_: RagRecord, outcome: Outcome) -> None:
        nonlocal scored
        if outcome.status is EvaluationStatus.SCORED:
            with lock:
                scored += 1

    start = time.perf_counter()
    for r in records:
        if not scorer.submit(r, done):
            raise RuntimeError("queue full: raise queue_size")
    if not scorer.drain(600):
        raise RuntimeError("scorer did not drain")
    elapsed = time.perf_counter() - start
    scorer.shutdown(5)
    return len(records) / elapsed, scored


def run_gather(base_url: str, records: list[RagRecord], concurrency: int) -> float:
    async def main() -> float:
        judge = make_judge(base_url)
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


def app_latency(base_url: str, concurrency: int, requests: int, rate: float
                ) -> dict[str, float]:
    chain = build_chain()
    rt = ragas_trace.setup(service_name="bench", judge=make_judge(base_url),
                           tracer_provider=TracerProvider(), exporter=InMemorySpanExporter(),
                           concurrency=concurrency, queue_size=requests, hold_timeout_s=120)
    off_provider = TracerProvider()
    off_provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    handlers = {"on": rt.langchain_handler(app_name="bench"),
                "off": rt.langchain_handler(app_name="bench", tracer_provider=off_provider)}
    for name in ("on", "off"):  # warm up both paths
        chain.invoke("warm up?", config={"callbacks": [handlers[name]]})
    latencies: dict[str, list[float]] = {"on": [], "off": []}
    interval = 1.0 / rate
    next_at = time.perf_counter()
    for i in range(requests):
        order = ("on", "off") if i % 2 == 0 else ("off", "on")
        for name in order:
            start = time.perf_counter()
            chain.invoke(f"When was lighthouse number {i} built?",
                         config={"callbacks": [handlers[name]]})
            latencies[name].append(time.perf_counter() - start)
        next_at += interval
        time.sleep(max(0.0, next_at - time.perf_counter()))
    busy = rt.pipeline.scorer.pending
    rt.shutdown(timeout_s=1)
    off_provider.shutdown()
    on_ms = statistics.median(latencies["on"]) * 1000
    off_ms = statistics.median(latencies["off"]) * 1000
    return {"on_median_ms": on_ms, "off_median_ms": off_ms, "on_over_off": on_ms / off_ms,
            "records_in_flight_at_end": busy}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--records", type=int, default=160)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--rate", type=float, default=40.0, help="request pairs per second")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    latency = args.latency_ms / 1000
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(latency)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        ideal = args.concurrency / (2 * latency)
        scorer_rates: list[float] = []
        gather_rates: list[float] = []
        for rep in range(args.repeats):
            batch = [record(rep * args.records + i) for i in range(args.records)]
            runs = [("scorer", scorer_rates), ("gather", gather_rates)]
            for name, rates in (runs if rep % 2 == 0 else runs[::-1]):
                if name == "scorer":
                    rate, scored = run_scorer(base_url, batch, args.concurrency)
                    if scored != len(batch):
                        raise RuntimeError(f"only {scored}/{len(batch)} records scored")
                else:
                    rate = run_gather(base_url, batch, args.concurrency)
                rates.append(rate)
        scorer_rate = statistics.median(scorer_rates)
        gather_rate = statistics.median(gather_rates)
        latency_result = app_latency(base_url, args.concurrency, args.requests, args.rate)
    finally:
        server.terminate()
        server.wait(5)
    result = {
        "latency_s": latency, "concurrency": args.concurrency, "records": args.records,
        "repeats": args.repeats, "ideal_records_per_s": ideal,
        "scorer_records_per_s": scorer_rate, "gather_records_per_s": gather_rate,
        "scorer_over_ideal": scorer_rate / ideal, "scorer_over_gather": scorer_rate / gather_rate,
        "scorer_runs": scorer_rates, "gather_runs": gather_rates, **latency_result,
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"judge latency L = {latency:.3f} s per call, concurrency C = {args.concurrency}")
        print(f"ideal C/(2L):        {ideal:7.2f} records/s")
        print(f"background scorer:   {scorer_rate:7.2f} records/s  "
              f"({scorer_rate / ideal:.1%} of ideal; runs {[round(r, 2) for r in scorer_rates]})")
        print(f"bare asyncio.gather: {gather_rate:7.2f} records/s  "
              f"(scorer/gather = {scorer_rate / gather_rate:.3f})")
        print(f"app latency median: on {latency_result['on_median_ms']:.3f} ms, "
              f"off {latency_result['off_median_ms']:.3f} ms, "
              f"on/off = {latency_result['on_over_off']:.3f} "
              f"({int(latency_result['records_in_flight_at_end'])} records still with the "
              "judge at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
