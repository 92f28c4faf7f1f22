"""``ragas-trace serve`` as a per-host sidecar: every thread at idle CPU priority (its
default on loopback), a burst it cannot keep up with stays bounded by the hold
buffer, the excess exported and counted as ``dropped`` with its reason, and a restart
of it (its own deploy) while the app exports loses no request."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragas_trace import semconv as sc
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver
from ragas_trace.testing.rag_spans import rag_request

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux SCHED_IDLE")


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("RAGAS_GATEWAY_", "RAGAS_TRACE_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "ragas_trace.cli.main", "serve", "--otlp-grpc", "off",
         "--otlp-http", "127.0.0.1:0", "--log-format", "text", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**clean, **(env or {})})


def _policies(pid: int) -> set[int]:
    return {os.sched_getscheduler(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as r:
        body = r.read().decode()
    return json.loads(body) if url.endswith("/health") else body


@pytest.fixture
def downstream() -> Iterator[OtlpGrpcReceiver]:
    with OtlpGrpcReceiver() as receiver:
        yield receiver


@pytest.mark.parametrize(("flag", "expected"), [
    ((), os.SCHED_IDLE), (("--idle-priority",), os.SCHED_IDLE),
    (("--idle-priority", "false"), os.SCHED_OTHER)])
def test_every_thread_of_a_loopback_sidecar_runs_at_idle_priority(
        downstream: OtlpGrpcReceiver, flag: tuple[str, ...], expected: int) -> None:
    proc = _serve("--forward-endpoint", downstream.endpoint, "--judge", "local", *flag)
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["cpu_priority"] == ("idle" if expected == os.SCHED_IDLE else "normal")
        # The judge's threads start with the first trace: send one and let it be scored.
        provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
        provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{ready['otlp_http']}/v1/traces")))
        rag_request(provider.get_tracer("t"))
        provider.shutdown()
        assert downstream.wait_for(lambda spans: any(
            s.attributes.get(sc.RAGAS_EVALUATION_STATUS) for s in spans), timeout=120)
        assert len(os.listdir(f"/proc/{proc.pid}/task")) > 3  # gRPC, judge, forwarder...
        assert _policies(proc.pid) == {expected}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


def _burn(stop: threading.Event) -> None:
    # A busy process at normal priority per core: the CPU is saturated, as in a burst.
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 1)]
    stop.wait()
    for p in procs:
        p.kill()
        p.wait()


def test_a_burst_the_judge_cannot_keep_up_with_is_bounded_and_counted(
        downstream: OtlpGrpcReceiver) -> None:
    held_bound, burst = 4, 60
    proc = _serve("--forward-endpoint", downstream.endpoint, "--judge", "local",
                  "--quiet-s", "0.2", "--metrics-port", "0",
                  env={"RAGAS_TRACE_MAX_HELD_SPANS": str(held_bound),
                       "RAGAS_TRACE_CONCURRENCY": "1"})
    stop = threading.Event()
    burner = threading.Thread(target=_burn, args=(stop,))
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        base = ready["otlp_http"]
        burner.start()
        provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
        provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{base}/v1/traces")))
        tracer = provider.get_tracer("t")
        for i in range(burst):
            rag_request(tracer, question=f"Where is the office number {i}?",
                        answer=f"Office {i} is in Lyon.",
                        docs=(f"Office {i} of the firm is in Lyon, near the river.",))
        provider.shutdown()
        # While the CPU is saturated the sidecar barely runs (it may not even answer
        # /health): the burst waits in its bounded buffers. Then the burners stop.
        threading.Timer(3.0, stop.set).start()
        most_held = 0

        def roots() -> list[Any]:
            return [s for s in downstream.spans()
                    if s.name == "rag" and s.attributes.get(sc.RAGAS_EVALUATION_STATUS)]
        deadline = time.monotonic() + 300
        while len(roots()) < burst and time.monotonic() < deadline:
            try:
                scoring = _get(f"{base}/health").get("scoring", {})
            except OSError:  # starved: no answer in time
                continue
            most_held = max(most_held, scoring.get("held_for_scoring", 0))
            assert proc.poll() is None
            time.sleep(0.05)
        statuses = [(s.attributes[sc.RAGAS_EVALUATION_STATUS],
                     s.attributes.get(sc.RAGAS_EVALUATION_REASON)) for s in roots()]
        metrics = _get(f"http://127.0.0.1:{ready['metrics_port']}/metrics")
    finally:
        stop.set()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        burner.join(30)
    assert most_held <= held_bound
    dropped = [s for s in statuses if s[0] == "dropped"]
    assert dropped and all(reason == "hold_full" for _, reason in dropped)
    assert len(statuses) == burst  # every root leaves, scored or dropped with its reason
    assert {s for s, _ in statuses} <= {"scored", "dropped"}
    counted = sum(float(v) for v in re.findall(
        r'^ragas_scorer_dropped_total\{[^}]*reason="hold_full"[^}]*\}\s+(\S+)', metrics, re.M))
    assert counted == len(dropped)


def test_a_serve_that_refuses_to_start_leaves_the_priority_as_it_was() -> None:
    from ragas_trace.cli.main import main

    before = os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)
    # Loopback (idle priority by default) but no next hop: refused, exit status 2.
    assert main(["serve", "--otlp-grpc", "127.0.0.1:0", "--otlp-http", "off"]) == 2
    assert (os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)) == before


def test_a_sidecar_restarted_while_the_app_exports_loses_no_request(
        downstream: OtlpGrpcReceiver, tmp_path: Any) -> None:
    # The app's OTLP exporter retries while no sidecar listens; the old sidecar scores
    # what it holds within its exit deadline (the rest would go to the spool, which the
    # new one takes over).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ("--otlp-http", f"127.0.0.1:{port}", "--forward-endpoint", downstream.endpoint,
            "--judge", "local")
    env = {"RAGAS_TRACE_SPOOL_DIR": str(tmp_path / "spool")}
    first = _serve(*args, env=env)
    second = None
    provider = TracerProvider(resource=Resource.create({"service.name": "app"}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces"),
        schedule_delay_millis=200))
    tracer = provider.get_tracer("t")
    try:
        assert first.stdout is not None and json.loads(first.stdout.readline())["event"] \
            == "ready"
        for i in range(60):
            if i == 30:
                assert provider.force_flush(10_000)  # the first sidecar holds these
                first.send_signal(signal.SIGTERM)
                first.communicate(timeout=60)
                assert first.returncode == 0
            rag_request(tracer, question=f"Where is the office number {i}?",
                        answer=f"Office {i} is in Lyon.",
                        docs=(f"Office {i} of the firm is in Lyon, near the river.",))
        second = _serve(*args, env=env)
        provider.shutdown()  # the second half, into the second sidecar once it listens

        def roots() -> dict[str, str]:
            return {str(s.attributes.get("input.value")):
                    str(s.attributes[sc.RAGAS_EVALUATION_STATUS])
                    for s in downstream.spans()
                    if s.name == "rag" and s.attributes.get(sc.RAGAS_EVALUATION_STATUS)}
        deadline = time.monotonic() + 120
        while len(roots()) < 60 and time.monotonic() < deadline:
            time.sleep(0.2)
        found = roots()
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                proc.communicate(timeout=60)
    assert found == {f"Where is the office number {i}?": "scored" for i in range(60)}
    rag_roots = [s for s in downstream.spans() if s.name == "rag"
                 and s.attributes.get(sc.RAGAS_EVALUATION_STATUS)]
    assert len(rag_roots) == 60  # each once
