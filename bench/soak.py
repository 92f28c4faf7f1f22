"""Long runs stay flat (issue 30): a soak of an in-process LangChain app and of the
gateway at a steady request rate, sampling resources every minute, with every request
accounted for from the Prometheus endpoints.

What runs (each in its own process; this one sends the gateway's requests and samples)
  app        two LangChain RAG chains (bench/langchain_apps.py's fakes), a request a
             second each: app_local with ``ragas_trace.setup()``'s handler, the local
             judge, sample rate 0.5; app_llm on a second ``setup()`` (its own
             TracerProvider and /metrics) whose judge is the OpenAI judge on a loopback
             FakeOpenAIServer.
  app_glibc  the same with RAGAS_TRACE_MMAP_THRESHOLD=0: glibc's mmap threshold left
             to glibc, which raises it to 8-16 MiB as the local judge loads (see
             ragas_trace.allocator); what fixing it at 1 MiB, the default, buys.
  control    the same chains and requests without ragas-trace: an app's RSS slope is
             judged over the control's, what the library adds to the app's own.
  gateway    ``ragas-trace serve --judge local --sample-rate 0.5`` (run through this
             script's ``--gateway-child``, which adds tracemalloc), fed OTLP/HTTP by a
             sender thread here, forwarding to a counting gRPC sink.
  judge      the FakeOpenAIServer.
Each stream mixes ordinary requests, huge ones (1 MB of passages and a 100 kB answer for
the local judge, 70 kB for the LLM judge; for the gateway a 3 MiB attribute, and a 5 MiB
body it refuses) and malformed ones (the retriever or the model raising, an empty
question, text of superscripts, lone surrogates and NULs; for the gateway, bodies that
are not OTLP).

Phases (of ``--minutes``, 60 for the full run): warm-up 1/6, steady 1/4, slow judge 1/6
(first half: every judge reply takes 30 s, scaled by minutes/60; second half: the same
wait, then 429 with Retry-After), recovery 5/12. Every ``minutes`` seconds (a minute in
the full run): RSS, Python heap (tracemalloc), threads (those the sample before saw too)
and open file descriptors of the app processes and of the gateway, held spans and queue
depths (the /metrics gauges). Slopes by least squares over the samples after warm-up,
leaving out the slow phase and the first fifth of recovery (the backlog drains there),
so a slope is the growth of the flat parts, and whatever the slow phase left behind
shows as a step between them. Tracemalloc's top growing allocations (middle of warm-up
to end) are recorded too: the baseline snapshot is taken before the slopes' window
because building it takes tens of MiB, which the allocator keeps (taken at the end of
warm-up, it showed as an RSS step of 7 to 18 MiB in every traced process at the window's
start).

Accounting (asserted, never estimated): per stream, requests in = the sum of
``ragas_evaluations_total`` over its statuses (scored, not_sampled, unscorable,
failed, timeout, dropped) read from the real /metrics endpoint, and per metric the
sum of ``ragas_metric_evaluations_total`` over its statuses (its ``scored`` equal to
the metric's histogram count); no ``ragas_internal_errors_total``;
``ragas_scorer_dropped_total`` by reason (hold_timeout aside: those spans left
unscored, and their request is counted when the judge answers) equals the dropped
status; for the gateway, OTLP requests refused (non-200 answers) equal
``ragas_gateway_requests_refused_total`` and the RAG traces of accepted requests are
the requests in.

    python bench/soak.py --minutes 60          # the full run; writes bench/results/soak.json
    python bench/soak.py --minutes 3 --report out.json --no-write   # what the slow test runs
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from glibc_malloc import mallinfo2

_MIB = 1 << 20
SAMPLE_RATE = 0.5
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
# Bounds the figures are judged by (the full run: per hour, after warm-up).
RSS_SLOPE_MIB_H = 2.0
HEAP_SLOPE_MIB_H = 1.0
THREADS_SLOPE_H = 0.0
FDS_SLOPE_H = 1.0
# The short run (the slow test): growth from the end of warm-up to the end, absolute.
# RSS moves by tens of MiB as 1-5 MiB requests pass through the allocator's arenas in
# the first minutes (72 MiB in one clean CI run, heap flat): the heap, measured
# exactly, is the finer leak check there; RSS catches only a gross leak.
SHORT_RSS_GROWTH_MIB = 128.0
SHORT_HEAP_GROWTH_MIB = 8.0
# A leak of one thread or socket per request adds hundreds in the short run; these are
# the pools' sizes (the scorer's 8 concurrent judge calls, each a connection and at most
# a resolver thread), which fill as the backlog of the slow phase drains.
SHORT_THREADS_GROWTH = 8.0
SHORT_FDS_GROWTH = 16.0


# -- the judge process ---------------------------------------------------------------

def judge_child() -> int:
    """The FakeOpenAIServer; reads ``normal`` / ``slow S`` / ``limited S RETRY`` on stdin."""
    from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault

    server = FakeOpenAIServer().start()
    print(json.dumps({"base_url": server.base_url}), flush=True)
    for line in sys.stdin:
        words = line.split()
        server.clear_faults()
        if not words or words[0] == "normal":
            server.latency_s = 0.0
        elif words[0] == "slow":
            server.latency_s = float(words[1])
        elif words[0] == "limited":
            server.latency_s = float(words[1])
            server.inject(Fault.RATE_LIMIT, times=None, retry_after_s=float(words[2]))
        stats = server.stats()
        print(json.dumps({"requests": stats.requests,
                          "rate_limited": stats.faults[Fault.RATE_LIMIT]}), flush=True)
    server.stop()
    return 0


# -- the gateway process -------------------------------------------------------------

def trace_heap(heap_file: str, interval_s: float) -> None:
    """Tracemalloc for a child process: its heap goes to ``heap_file`` every interval
    (one JSON line); SIGUSR1 takes the baseline snapshot, SIGUSR2 appends the top
    allocations grown since it."""
    tracemalloc.start(1)
    baseline: list[tracemalloc.Snapshot] = []

    def write(entry: dict[str, Any]) -> None:
        with open(heap_file, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def sample() -> None:
        while True:
            write({"t": time.time(), "heap": tracemalloc.get_traced_memory()[0],
                   **malloc_stats()})
            time.sleep(interval_s)

    signal.signal(signal.SIGUSR1, lambda *_: baseline[:] or baseline.append(_snapshot()))
    signal.signal(signal.SIGUSR2, lambda *_: write({"top": top_growth(baseline[0])})
                  if baseline else None)
    threading.Thread(target=sample, name="soak-heap", daemon=True).start()


def malloc_stats() -> dict[str, int]:
    """glibc's own count over all its arenas: bytes in use (mmapped blocks included) and
    bytes freed but kept. RSS that grows while the Python heap stays flat is one or the
    other: native memory in use, or free memory the allocator holds on to. Empty where
    there is no glibc ``mallinfo2``."""
    info = mallinfo2()
    if info is None:
        return {}
    return {"malloc_used": info.uordblks + info.hblkhd, "malloc_free": info.fordblks}


def gateway_child(heap_file: str, interval_s: float, serve_args: list[str]) -> int:
    """``ragas-trace serve`` with its heap traced (``trace_heap``)."""
    # Imported before tracing starts: tracing every import's allocations slows the
    # start several times over, and growth is measured after warm-up anyway.
    from ragas_trace.cli.main import main
    from ragas_trace.gateway.service import Gateway  # noqa: F401

    trace_heap(heap_file, interval_s)
    return main(["serve", *serve_args])


def _snapshot() -> tracemalloc.Snapshot:
    return tracemalloc.take_snapshot().filter_traces(
        (tracemalloc.Filter(False, tracemalloc.__file__),))


def top_growth(before: tracemalloc.Snapshot, n: int = 12) -> list[dict[str, Any]]:
    """The ``n`` lines whose allocations grew most since ``before`` (what shrank, such as
    a huge request freed, is not a leak and would crowd them out)."""
    stats = sorted((s for s in _snapshot().compare_to(before, "lineno") if s.size_diff > 0),
                   key=lambda s: s.size_diff, reverse=True)
    return [{"where": str(s.traceback[0]), "size_diff_kib": round(s.size_diff / 1024, 1),
             "count_diff": s.count_diff} for s in stats[:n]]


# -- resources -----------------------------------------------------------------------

def proc_status(pid: int) -> dict[str, float]:
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "Threads"):
                values[key] = float(rest.split()[0])
    return {"rss_mib": values.get("VmRSS", 0.0) / 1024, "threads": values.get("Threads", 0.0),
            "fds": float(len(os.listdir(f"/proc/{pid}/fd")))}


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The samples of a /metrics endpoint: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        text = r.read().decode()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = tuple(sorted((k, v) for k, v in s.labels.items()
                                  if k not in ("service", "app", "judge", "job", "instance")))
            key = (s.name, labels)
            out[key] = out.get(key, 0.0) + s.value
    return out


def total(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
          **match: str) -> float:
    return sum(v for (n, labels), v in samples.items()
               if n == name and all(dict(labels).get(k) == w for k, w in match.items()))


def by_label(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
             label: str, **match: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for (n, labels), v in samples.items():
        if n == name and v and all(dict(labels).get(k) == w for k, w in match.items()):
            key = dict(labels).get(label, "")
            out[key] = out.get(key, 0) + int(v)
    return out


def slope_per_hour(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value), per hour."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return 0.0
    return sum((t - mx) * (v - my) for t, v in points) / sxx * 3600


# -- the app streams -----------------------------------------------------------------

_HOSTILE = ("The lake covers 25 km². See ① and ②.", "caf\udc80 \x00 nul", "x\u202e\u200b")


def build_app(huge: dict[str, bool], fail: dict[str, str], repeat: int) -> Any:
    """bench/langchain_apps.py's chain, whose retriever and model read the next request's
    shape from ``huge`` / ``fail`` (one app, the shapes of its requests vary); a huge
    request has four passages of ``repeat`` sentences and an answer of half as many."""
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    from langchain_apps import FakeChat, KnowledgeBase

    class Retriever(KnowledgeBase):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            if fail.get("where") == "retriever":
                raise RuntimeError("vector store unavailable")
            docs = super()._get_relevant_documents(query, run_manager=run_manager)
            if huge.get("on"):
                return [Document(page_content=f"Passage {i}: Paris is the capital of France. "
                                 * repeat, id=f"big-{i}") for i in range(4)]
            if fail.get("where") == "text":
                return [Document(page_content=t, id=f"odd-{i}") for i, t in enumerate(_HOSTILE)]
            return docs

    class Chat(FakeChat):
        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            if fail.get("where") == "model":
                raise RuntimeError("model overloaded")
            if huge.get("on"):
                text = "Paris is the capital of France. " * (repeat // 2)
                return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])
            return super()._generate(messages, stop, run_manager, **kwargs)

    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    docs = Retriever() | (lambda ds: "\n".join(d.page_content for d in ds))
    return {"context": docs, "question": RunnablePassthrough()} | prompt | Chat() \
        | StrOutputParser()


_QUESTIONS = ("What is the capital of France?", "Which city is France's capital?",
              "Where does the French government sit?")
_APP_MALFORMED = ("retriever", "model", "empty", "text")


@dataclass
class Stream:
    """One request source: its counts by kind and what it saw."""

    name: str
    rate_per_s: float
    sent: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)

    def count(self, table: dict[str, int], key: str, n: int = 1) -> None:
        table[key] = table.get(key, 0) + n


def kind_of(i: int) -> str:
    """Every 20 requests: two huge, four malformed (so warm-up has seen each kind)."""
    return "huge" if i % 10 == 2 else "malformed" if i % 5 == 4 else "ordinary"


def run_paced(stream: Stream, stop: threading.Event, one: Callable[[int], None]) -> None:
    """Request ``i`` at ``i / rate`` seconds from the start; a late one goes at once,
    never in a burst to catch up."""
    start = time.monotonic()
    i = 0
    while not stop.is_set():
        due = start + i / stream.rate_per_s
        if stop.wait(max(0.0, due - time.monotonic())):
            return
        if time.monotonic() - due > 5.0:
            start = time.monotonic() - i / stream.rate_per_s  # fell behind: skip, no burst
        one(i)
        i += 1


def app_sender(stream: Stream, app: Any, handler: Any | None, huge: dict[str, bool],
               fail: dict[str, str]) -> Callable[[int], None]:
    config = {"callbacks": [handler]} if handler is not None else {}

    def one(i: int) -> None:
        kind = kind_of(i)
        question = _QUESTIONS[i % len(_QUESTIONS)]
        huge["on"] = kind == "huge"
        fail["where"] = _APP_MALFORMED[(i // 5) % len(_APP_MALFORMED)] \
            if kind == "malformed" else ""
        if fail["where"] == "empty":
            question = ""
        elif fail["where"] == "text":
            question = _HOSTILE[i % len(_HOSTILE)]
        stream.count(stream.sent, kind if kind != "malformed" else f"malformed:{fail['where']}")
        try:
            app.invoke(question, config=config)
        except RuntimeError as exc:  # the malformed ones raise into the app, as they would
            stream.count(stream.errors, str(exc))

    return one


# The app processes: ``app`` as users run it; ``app_glibc`` the same with glibc's mmap
# threshold left to glibc (the opt-out; the default before 5 December); ``control``
# without ragas-trace. Pipelines of ``app_glibc`` are named with its prefix.
APP_PROCS = {"app": ([], {}), "app_glibc": ([], {"RAGAS_TRACE_MMAP_THRESHOLD": "0"}),
             "control": (["--control"], {})}
# The fake LLM judge is a single Python process; a 1 MB prompt keeps it busy for minutes
# (a real API refuses such a prompt at once), so app_llm's huge requests are 70 kB.
APPS = (("app_local", 6000), ("app_llm", 400))


def app_child(heap_file: str, interval_s: float, base_url: str, breaker_reset_s: float,
              control: bool) -> int:
    """The two apps of ``APPS``, a request a second each, in a process of their own, so
    that the RSS measured is theirs and not the load generator's. ``control``: the same
    apps and requests without ragas-trace, the baseline their RSS is read against.
    Prints the /metrics ports; on "stop" (stdin) stops sending and prints what it sent;
    on "shutdown", prints the internal errors counted and shuts the pipelines down."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    import ragas_trace
    from ragas_trace._internal_errors import internal_error_counts
    from ragas_trace.judges.openai_judge import OpenAIJudge

    class Discard(SpanExporter):
        """The backend: keeps nothing."""

        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    setups = {} if control else {
        "app_local": ragas_trace.setup(
            "soak-local", exporter=Discard(), judge="local", sample_rate=SAMPLE_RATE,
            metrics_port=0, tracer_provider=TracerProvider(), handle_sigterm=False),
        "app_llm": ragas_trace.setup(
            "soak-llm", exporter=Discard(), judge=OpenAIJudge(base_url=base_url, api_key="soak"),
            sample_rate=SAMPLE_RATE, metrics_port=0, breaker_reset_s=breaker_reset_s,
            tracer_provider=TracerProvider(), handle_sigterm=False),
    }
    streams = {name: Stream(name, 1.0) for name, _ in APPS}
    senders = {}
    for name, repeat in APPS:
        huge: dict[str, bool] = {}
        fail: dict[str, str] = {}
        handler = setups[name].langchain_handler() if setups else None
        senders[name] = app_sender(streams[name], build_app(huge, fail, repeat), handler,
                                   huge, fail)
    trace_heap(heap_file, interval_s)  # after the imports and setup(), as in the gateway
    print(json.dumps({"ports": {n: rt.metrics_port for n, rt in setups.items()}}), flush=True)
    stop = threading.Event()
    threads = [threading.Thread(target=run_paced, args=(streams[n], stop, senders[n]),
                                name=f"soak-{n}") for n in streams]
    for t in threads:
        t.start()
    for line in sys.stdin:
        if line.strip() == "stop":
            stop.set()
            for t in threads:
                t.join()
            print(json.dumps({n: {"sent": st.sent, "errors": st.errors}
                              for n, st in streams.items()}), flush=True)
        elif line.strip() == "shutdown":
            break
    stop.set()
    # Not a metric: swallowed, logged once and counted in this process (both apps).
    print(json.dumps(internal_error_counts()), flush=True)
    for rt in setups.values():
        rt.shutdown(10.0)
    return 0


# -- the gateway stream --------------------------------------------------------------

def gateway_sender(stream: Stream, http_endpoint: str) -> Callable[[int], None]:
    from gateway_abuse import malformed, post, request, spans_in

    ordinary = [request(i, 1, rag=True) for i in range(30)]
    big = request(1000, 1, blob_bytes=3 * _MIB, rag=True)
    too_big = request(2000, 1, blob_bytes=5 * _MIB, rag=True)
    assert spans_in(ordinary[0]) > 0

    def one(i: int) -> None:
        kind = kind_of(i)
        headers = None
        if kind == "ordinary":
            body, key = _fresh_ids(ordinary[i % len(ordinary)], i), "ordinary"
        elif kind == "huge":
            body, key = (_fresh_ids(big, i), "huge") if i % 20 == 2 \
                else (too_big, "huge_refused")
        else:
            body, headers = malformed(i // 5)
            key = "malformed"
        code = post(http_endpoint, body, headers)
        stream.count(stream.sent, key)
        stream.count(stream.errors, str(code))
        if code == 200:
            stream.count(stream.sent, "rag_traces_accepted")

    return one


def _fresh_ids(body: bytes, i: int) -> bytes:
    """The request with new trace ids: the gateway scores a trace id once."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    message = ExportTraceServiceRequest.FromString(body)
    prefix = (i + 1).to_bytes(8, "big")
    for rs in message.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                span.trace_id = prefix + span.trace_id[8:]
    return message.SerializeToString()


# -- the run -------------------------------------------------------------------------

@dataclass
class Phases:
    minutes: float

    @property
    def total_s(self) -> float:
        return self.minutes * 60

    def bounds(self) -> dict[str, tuple[float, float]]:
        t = self.total_s
        warm, steady, slow = t / 6, t / 6 + t / 4, t / 6 + t / 4 + t / 6
        return {"warm_up": (0, warm), "steady": (warm, steady), "slow_judge": (steady, slow),
                "recovery": (slow, t)}

    def flat(self, t: float) -> bool:
        """After warm-up, outside the slow phase and the first fifth of recovery."""
        b = self.bounds()
        settle = b["recovery"][0] + (b["recovery"][1] - b["recovery"][0]) / 5
        return b["warm_up"][1] <= t and not (b["slow_judge"][0] <= t < settle)

    def phase(self, t: float) -> str:
        for name, (lo, hi) in self.bounds().items():
            if lo <= t < hi:
                return name
        return "recovery"


class Sampler:
    """Every ``interval_s``: resources of the child processes (pid and heap file by
    name) and the gauges of the three /metrics endpoints."""

    def __init__(self, phases: Phases, interval_s: float, procs: dict[str, tuple[int, Path]],
                 ports: dict[str, int]) -> None:
        self.phases = phases
        self.interval_s = interval_s
        self.procs = procs
        self.ports = ports
        self.rows: list[dict[str, Any]] = []
        self.tids: dict[str, set[str]] = {}
        self.start = time.monotonic()

    def resources(self) -> dict[str, dict[str, float]]:
        out = {}
        for name, (pid, heap_file) in self.procs.items():
            status = proc_status(pid)
            # A leaked thread stays; one sampled in flight (a request's pool, gRPC's
            # timer and resolver threads) is gone a minute later. Threads are counted
            # when the sample before saw them too: in flight, the last run had 20 and
            # 21 in two single samples against 19 in all the others.
            tids = set(os.listdir(f"/proc/{pid}/task"))
            seen = self.tids.get(name, tids)
            self.tids[name] = tids
            out[name] = {**status, "threads_sampled": status["threads"],
                         "threads": float(len(tids & seen)), **last_heap(heap_file)}
        return out

    def sample(self) -> dict[str, Any]:
        t = time.monotonic() - self.start
        row: dict[str, Any] = {"t": round(t, 1), "phase": self.phases.phase(t)}
        row["process"] = self.resources()
        for name, port in self.ports.items():
            m = scrape(port)
            row[name] = {"held_spans": total(m, "ragas_held_spans"),
                         "scorer_queue": total(m, "ragas_scorer_queue_size")}
            if name == "gateway":
                row[name]["gateway_gauges"] = {
                    n.removeprefix("ragas_gateway_"): v for (n, labels), v in m.items()
                    if n.startswith("ragas_gateway_") and not n.endswith(("_total", "_created"))}
        self.rows.append(row)
        return row

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            row = self.sample()
            print(json.dumps(row), flush=True)
            if stop.wait(self.interval_s):
                return


def heap_lines(heap_file: Path) -> list[dict[str, Any]]:
    """What a child wrote to its heap file (``trace_heap``), one JSON line each."""
    return [json.loads(x) for x in heap_file.read_text().splitlines() if x]


def last_heap(heap_file: Path) -> dict[str, float]:
    """The child's last traced heap and malloc counts, MiB."""
    lines = [x for x in heap_lines(heap_file) if "heap" in x]
    if not lines:
        return {"heap_mib": float("nan")}
    return {"heap_mib": lines[-1]["heap"] / _MIB,
            **{f"{k}_mib": lines[-1][k] / _MIB for k in ("malloc_used", "malloc_free")
               if k in lines[-1]}}


def wait_for_line(heap_file: Path, match: Callable[[dict[str, Any]], bool],
                  timeout_s: float) -> dict[str, Any] | None:
    """The last line of a child's heap file that ``match`` accepts, once there is one."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = [x for x in heap_lines(heap_file) if match(x)]
        if found or time.monotonic() > deadline:
            return found[-1] if found else None
        time.sleep(0.5)


def top_of(heap_file: Path, timeout_s: float) -> list[dict[str, Any]]:
    """The top growth a child appends on SIGUSR2 (the snapshot takes a while)."""
    line = wait_for_line(heap_file, lambda x: "top" in x, timeout_s)
    return line["top"] if line else []


def start_child(args: list[str], env: dict[str, str] | None = None
                ) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    """This script in a child process (stdin and stdout piped) and its first line."""
    proc = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def tell(proc: subprocess.Popen[str], line: str) -> Any:
    """Write a line to a child and read its one-line JSON answer."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def start_gateway(sink_port: int, heap_file: Path,
                  interval_s: float) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    return start_child(["--gateway-child", str(heap_file), str(interval_s), "--",
                        "--otlp-grpc", "off", "--otlp-http", "127.0.0.1:0",
                        "--forward-endpoint", f"127.0.0.1:{sink_port}", "--judge", "local",
                        "--sample-rate", str(SAMPLE_RATE), "--metrics-port", "0",
                        "--quiet-s", "0.5", "--log-level", "error"])


def wait_idle(ports: dict[str, int], requests_in: dict[str, int], timeout_s: float) -> bool:
    """Until every endpoint holds nothing, queues nothing and has counted every request
    (a span released at its hold timeout leaves the gauges while the judge still works
    on its record: the request is counted when the judge answers)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        busy = 0.0
        for name, port in ports.items():
            m = scrape(port)
            busy += total(m, "ragas_held_spans") + total(m, "ragas_scorer_queue_size")
            busy += requests_in[name] - total(m, "ragas_evaluations_total")
        if busy <= 0:
            return True
        time.sleep(1.0)
    return False


def account(m: dict[tuple[str, tuple[tuple[str, str], ...]], float],
            requests_in: int) -> dict[str, Any]:
    """Requests in against what the endpoint counted, by status and reason."""
    statuses = by_label(m, "ragas_evaluations_total", "status")
    dropped = by_label(m, "ragas_scorer_dropped_total", "reason")
    hold_timeouts = dropped.pop("hold_timeout", 0)
    per_metric: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        by_status = by_label(m, "ragas_metric_evaluations_total", "status", metric=metric)
        per_metric[metric] = {
            "by_status": by_status, "unaccounted": requests_in - sum(by_status.values()),
            # The histogram's count is the same scored values, counted apart.
            "scored_matches_histogram": by_status.get("scored", 0) == int(
                total(m, f"ragas_{metric}_count"))}
    per_metric["faithfulness"]["unscored"] = by_label(m, "ragas_faithfulness_unscored_total",
                                                      "reason")
    counted = sum(statuses.values())
    return {
        "requests_in": requests_in,
        "by_status": statuses,
        "dropped_by_reason": dropped,
        "hold_timeouts": hold_timeouts,
        "per_metric": per_metric,
        "unaccounted": requests_in - counted,
        "dropped_matches_reasons": statuses.get("dropped", 0) == sum(dropped.values()),
        "internal_errors": by_label(m, "ragas_internal_errors_total", "where"),
    }


def run(minutes: float) -> dict[str, Any]:
    from gateway_throughput import CountingDownstream

    began = time.monotonic()
    stages: dict[str, float] = {}

    def stage(name: str) -> None:
        stages[name] = round(time.monotonic() - began, 1)
        print(f"soak: {name} at {stages[name]} s", file=sys.stderr, flush=True)

    phases = Phases(minutes)
    interval_s = minutes  # a minute in the full 60-minute run
    scale = min(1.0, minutes / 60)
    slow_s, retry_after_s = 30 * scale, max(0.5, 5 * scale)

    judge_proc, judge_ready = start_child(["--judge-child"])
    sink = CountingDownstream()
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    heap_files = {name: tmp / f"soak-{name}-heap-{os.getpid()}.jsonl"
                  for name in (*APP_PROCS, "gateway")}
    for heap_file in heap_files.values():
        heap_file.unlink(missing_ok=True)
    gateway, ready = start_gateway(sink.port, heap_files["gateway"], interval_s)
    apps: dict[str, subprocess.Popen[str]] = {}
    app_ready: dict[str, dict[str, Any]] = {}
    for name, (flags, env) in APP_PROCS.items():
        apps[name], app_ready[name] = start_child(
            ["--app-child", str(heap_files[name]), str(interval_s), judge_ready["base_url"],
             str(30 * scale), *flags], {**os.environ, **env})
    ports = {pipeline_name(proc, name): port for proc, r in app_ready.items()
             for name, port in r["ports"].items()}
    ports["gateway"] = ready["metrics_port"]
    assert all(isinstance(p, int) for p in ports.values())
    int_ports = {k: int(v) for k, v in ports.items()}

    gateway_stream = Stream("gateway", 1.0)
    stop_sending, stop_sampling = threading.Event(), threading.Event()
    children = {**{name: proc.pid for name, proc in apps.items()}, "gateway": gateway.pid}
    sampler = Sampler(phases, interval_s,
                      {name: (pid, heap_files[name]) for name, pid in children.items()},
                      int_ports)
    threads = [threading.Thread(target=run_paced, name="soak-gateway", args=(
                   gateway_stream, stop_sending,
                   gateway_sender(gateway_stream, ready["otlp_http"]))),
               threading.Thread(target=sampler.run, args=(stop_sampling,),
                                name="soak-sampler")]
    bounds = phases.bounds()
    judge_seen: dict[str, int] = {}
    stage("started")
    for t in threads:
        t.start()
    try:
        _sleep_until(sampler.start + bounds["warm_up"][1] / 2)
        for pid in children.values():
            os.kill(pid, signal.SIGUSR1)
        _sleep_until(sampler.start + bounds["slow_judge"][0])
        slow_lo, slow_hi = bounds["slow_judge"]
        tell(judge_proc, f"slow {slow_s}")
        _sleep_until(sampler.start + (slow_lo + slow_hi) / 2)
        tell(judge_proc, f"limited {slow_s} {retry_after_s}")
        _sleep_until(sampler.start + slow_hi)
        judge_seen = tell(judge_proc, "normal")
        _sleep_until(sampler.start + phases.total_s)
    finally:
        stop_sending.set()
        stop_sampling.set()
        app_streams = {name: tell(proc, "stop") for name, proc in apps.items()}
        for t in threads:
            t.join()
    stage("sent")
    streams = {pipeline_name(proc, name): st for proc in ("app", "app_glibc")
               for name, st in app_streams[proc].items()}
    requests_in = {name: sum(st["sent"].values()) for name, st in streams.items()}
    requests_in["gateway"] = gateway_stream.sent.get("rag_traces_accepted", 0)
    # At most the LLM judge's time budget for a record (180 s) and a margin.
    idle = wait_idle(int_ports, requests_in, timeout_s=240.0)
    stage("drained")
    # A heap line written after the drain, and before the top-growth snapshot (a snapshot
    # is itself on the heap while it is taken).
    drained_at = time.time()
    for heap_file in heap_files.values():
        wait_for_line(heap_file, lambda x: x.get("t", 0) > drained_at, 3 * interval_s)
    at_idle = sampler.resources()
    for pid in children.values():
        os.kill(pid, signal.SIGUSR2)
    metrics = {name: scrape(port) for name, port in int_ports.items()}
    accounting = {name: account(metrics[name], requests_in[name]) for name in int_ports}
    gw = gateway_stream
    refused_sent = sum(v for code, v in gw.errors.items() if code != "200")
    refused_counted = int(total(metrics["gateway"], "ragas_gateway_requests_refused_total"))
    accounting["gateway"].update({
        "otlp_requests": dict(gw.sent), "answers": dict(gw.errors),
        "refused_sent": refused_sent, "refused_counted": refused_counted,
        "refused_by_reason": by_label(metrics["gateway"],
                                      "ragas_gateway_requests_refused_total", "reason"),
        "spans_dropped": by_label(metrics["gateway"], "ragas_gateway_spans_dropped_total",
                                  "reason"),
    })
    for name in streams:
        accounting[name]["sent"] = streams[name]["sent"]
        accounting[name]["raised_into_app"] = streams[name]["errors"]
    tops = {name: top_of(heap_files[name], 120.0) for name in children}
    internal_errors = {name: tell(proc, "shutdown") for name, proc in apps.items()}
    for proc in apps.values():
        proc.wait(60)
    stage("apps shut down")
    gateway.send_signal(signal.SIGTERM)
    gateway.wait(60)
    judge_proc.stdin.close()  # type: ignore[union-attr]
    judge_proc.wait(30)
    for heap_file in heap_files.values():
        heap_file.unlink(missing_ok=True)
    stage("stopped")
    return {"stages_s": stages, "minutes": minutes, "interval_s": interval_s,
            "slow_judge_s": slow_s,
            "retry_after_s": retry_after_s,
            "phases": bounds, "idle_at_end": idle, "samples": sampler.rows,
            "accounting": accounting, "sink_spans": sink.count, "judge_until_recovery": judge_seen,
            "internal_errors_in_app_process": internal_errors, "top_growth": tops,
            "control_sent": {n: st["sent"] for n, st in app_streams["control"].items()},
            "at_idle": at_idle, "summary": summarize(phases, sampler.rows, at_idle)}


def _sleep_until(when: float) -> None:
    time.sleep(max(0.0, when - time.monotonic()))


def pipeline_name(proc: str, name: str) -> str:
    return name if proc == "app" else f"{proc}.{name}"


def summarize(phases: Phases, rows: list[dict[str, Any]],
              at_idle: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Slopes of the flat parts, growth from the steady phase's floor to the end (once
    everything is drained: what is left is kept, not in flight), and the slow phase's
    peak over the steady phase."""
    out: dict[str, Any] = {}
    for proc in (*APP_PROCS, "gateway"):
        flat = [r for r in rows if phases.flat(r["t"])]
        steady = [r for r in rows if r["phase"] == "steady"]
        slow = [r for r in rows if r["phase"] == "slow_judge"]
        entry: dict[str, Any] = {}
        # malloc's counts are there to tell what an RSS slope is, not judged.
        keys = [k for k in ("rss_mib", "heap_mib", "threads", "fds", "malloc_used_mib",
                            "malloc_free_mib") if all(k in r["process"][proc] for r in rows)]
        for key in keys:
            entry[f"{key}_per_h"] = round(slope_per_hour(
                [(r["t"], r["process"][proc][key]) for r in flat]), 3)
            if steady:
                entry[f"{key}_growth"] = round(at_idle[proc][key] - _head(steady, proc, key),
                                               3)
            if slow and steady:
                entry[f"{key}_slow_peak_over_steady"] = round(
                    max(r["process"][proc][key] for r in slow)
                    - max(r["process"][proc][key] for r in steady), 3)
        out[proc] = entry
    # The app's RSS, the load it carries aside: what ragas-trace adds to the app.
    for proc in ("app", "app_glibc"):
        out[f"{proc}_over_control"] = {
            key: round(out[proc][key] - out["control"][key], 3)
            for key in ("rss_mib_per_h", "rss_mib_growth") if key in out["control"]}
    out["pipelines"] = {}
    for name in rows[0] if rows else ():
        if name in ("t", "phase", "process"):
            continue
        out["pipelines"][name] = {
            "max_held_spans": max((r[name]["held_spans"] for r in rows), default=0),
            "max_scorer_queue": max((r[name]["scorer_queue"] for r in rows), default=0),
            "end_held_spans": rows[-1][name]["held_spans"] if rows else 0,
        }
    return out


def _head(rows: list[dict[str, Any]], proc: str, key: str) -> float:
    """The floor of the first three samples: a thread or socket that comes and goes
    with a request (LangChain runs parallel steps on a thread pool per invoke) is not
    growth; a leak raises the floor."""
    return float(min(r["process"][proc][key] for r in rows[:3]))



def failures(report: dict[str, Any], short: bool) -> list[str]:
    """The invariants, as plain sentences; empty when all hold. ``short``: growth is
    judged from the end of warm-up to the end (a slope of a few minutes is noise)."""
    bad: list[str] = []
    for name, acc in report["accounting"].items():
        if acc["unaccounted"] != 0:
            bad.append(f"{name}: {acc['unaccounted']} requests unaccounted ({acc['requests_in']} "
                       f"in, counted {acc['by_status']})")
        for metric, counts in acc["per_metric"].items():
            if counts["unaccounted"] != 0:
                bad.append(f"{name}: {metric}: {counts['unaccounted']} requests unaccounted "
                           f"({acc['requests_in']} in, counted {counts['by_status']})")
            if not counts["scored_matches_histogram"]:
                bad.append(f"{name}: {metric}: scored {counts['by_status'].get('scored', 0)} "
                           f"!= ragas_{metric}_count")
        if acc["internal_errors"]:
            bad.append(f"{name}: internal errors counted: {acc['internal_errors']}")
        if not acc["dropped_matches_reasons"]:
            bad.append(f"{name}: dropped status {acc['by_status'].get('dropped', 0)} != "
                       f"dropped reasons {acc['dropped_by_reason']}")
    gw = report["accounting"]["gateway"]
    if gw["refused_sent"] != gw["refused_counted"]:
        bad.append(f"gateway: {gw['refused_sent']} requests refused, "
                   f"{gw['refused_counted']} counted")
    if not report["idle_at_end"]:
        bad.append("spans still held or queued at the end")
    if not report["judge_until_recovery"].get("rate_limited"):
        bad.append("the slow phase sent no 429 (the phase did not run)")
    summary = report["summary"]
    for proc in ("app", "app_glibc", "gateway"):
        s = summary[proc]
        over = proc != "gateway" and not short
        if short:
            checks = [("rss_mib_growth", SHORT_RSS_GROWTH_MIB),
                      ("heap_mib_growth", SHORT_HEAP_GROWTH_MIB),
                      ("threads_growth", SHORT_THREADS_GROWTH),
                      ("fds_growth", SHORT_FDS_GROWTH)]
        else:
            checks = [("rss_mib_per_h", RSS_SLOPE_MIB_H), ("heap_mib_per_h", HEAP_SLOPE_MIB_H),
                      ("threads_per_h", THREADS_SLOPE_H), ("fds_per_h", FDS_SLOPE_H)]
            if proc == "app_glibc":  # the opt-out, for comparison: its RSS is reported
                checks = [c for c in checks if c[0] != "rss_mib_per_h"]
            elif over:  # an app's RSS is judged over the control's (the apps' own load)
                s = {**s, "rss_mib_per_h": summary[f"{proc}_over_control"]["rss_mib_per_h"]}
        for key, bound in checks:
            if s[key] > bound:
                where = f"{proc} over control" if over and key == "rss_mib_per_h" else proc
                bad.append(f"{where}: {key} = {s[key]} > {bound}")
    return bad


def figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    s, acc = report["summary"], report["accounting"]
    minutes = report["minutes"]
    out: dict[str, dict[str, Any]] = {}
    units = {"rss_mib": ("RSS", "MiB/h", RSS_SLOPE_MIB_H),
             "heap_mib": ("Python heap (tracemalloc)", "MiB/h", HEAP_SLOPE_MIB_H),
             "threads": ("threads", "threads/h", THREADS_SLOPE_H),
             "fds": ("open file descriptors", "FDs/h", FDS_SLOPE_H)}
    who = {"app": "in-process LangChain app (two setup() pipelines)",
           "app_glibc": "the same app, RAGAS_TRACE_MMAP_THRESHOLD=0 (threshold left to glibc)",
           "gateway": "gateway (ragas-trace serve)"}
    for proc, title in who.items():
        for key, (what, unit, bound) in units.items():
            target = f"<= {bound:g}"
            out[f"{proc}.{key}_per_h"] = {
                "value": s[proc][f"{key}_per_h"], "unit": unit, "target": target,
                "label": f"Soak ({minutes:g} min): {title}, {what} slope after warm-up"}
            if proc != "gateway" and key == "rss_mib":  # judged over the control, below
                del out[f"{proc}.{key}_per_h"]["target"]
        out[f"{proc}.rss_slow_peak_mib"] = {
            "value": s[proc]["rss_mib_slow_peak_over_steady"], "unit": "MiB",
            "label": f"Soak: {title}, RSS peak in the slow-judge phase (30 s replies, then "
                     "429 + Retry-After) over the steady phase's peak"}
    out["control.rss_mib_per_h"] = {
        "value": s["control"]["rss_mib_per_h"], "unit": "MiB/h",
        "label": f"Soak ({minutes:g} min): the same apps and requests without ragas-trace "
                 "(control process), RSS slope after warm-up"}
    for proc in ("app", "app_glibc"):
        out[f"{proc}_over_control.rss_mib_per_h"] = {
            "value": s[f"{proc}_over_control"]["rss_mib_per_h"], "unit": "MiB/h",
            "label": f"Soak ({minutes:g} min): what ragas-trace adds to the RSS slope of "
                     f"the {who[proc].removeprefix('the ')} (minus the control's)"}
    out["app_over_control.rss_mib_per_h"]["target"] = f"<= {RSS_SLOPE_MIB_H:g}"
    out["requests_in"] = {"value": sum(a["requests_in"] for a in acc.values()),
                          "exact": True,
                          "label": "Soak: RAG requests sent (apps and gateway; ordinary, "
                                   "huge, malformed)"}
    out["unaccounted"] = {
        "value": sum(abs(a["unaccounted"]) for a in acc.values()), "exact": True,
        "target": "<= 0",
        "label": "Soak: requests in minus scored + not sampled + unscorable + failed + "
                 "timeout + dropped, read from /metrics"}
    out["max_held_spans"] = {
        "value": max(p["max_held_spans"] for p in s["pipelines"].values()),
        "label": "Soak: most RAG spans held at once (slow-judge phase included; bound "
                 "max_held_spans = 1000)", "target": "<= 1000"}
    return out


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    if args_list[:1] == ["--judge-child"]:
        return judge_child()
    if args_list[:1] == ["--app-child"]:
        return app_child(args_list[1], float(args_list[2]), args_list[3], float(args_list[4]),
                         control=args_list[5:] == ["--control"])
    if args_list[:1] == ["--gateway-child"]:
        return gateway_child(args_list[1], float(args_list[2]), args_list[4:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--report", help="write the whole report (samples too) here")
    parser.add_argument("--no-write", action="store_true",
                        help="do not write bench/results/soak.json (short runs)")
    args = parser.parse_args(args_list)
    report = run(args.minutes)
    short = args.minutes < 30
    report["failures"] = failures(report, short)
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({"summary": report["summary"], "accounting": report["accounting"],
                      "failures": report["failures"]}, indent=1))
    if not args.no_write:
        from results_file import write_results

        write_results("soak", figures(report))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
