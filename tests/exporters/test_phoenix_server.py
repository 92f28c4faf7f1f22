"""Against a real Arize Phoenix server (pip ``arize-phoenix`` in ``.venv-phoenix``, or
the one ``$RAGAS_TRACE_PHOENIX`` names), on 127.0.0.1: scored requests through
``setup()`` (the demo) and through ``ragas-trace serve``, read back through
Phoenix's REST and GraphQL APIs. Each scored root span must carry one annotation per
metric with its own score (on the span and on its trace), sit in the project named
after its service with no evaluation trace beside it, its trace's latency must be
the request's, not the scoring's, and its retrieved passages carry document
annotations. A Phoenix restart in the middle of a run loses nothing that was counted
stored."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.testing.phoenix_server import PhoenixServer, phoenix_executable

REPO = Path(__file__).resolve().parents[2]
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
READ_BACK_S = 60.0  # Phoenix inserts spans in the background


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    executable = phoenix_executable(REPO / ".venv-phoenix")
    if executable is None:
        pytest.skip("Phoenix not installed: python3 -m venv .venv-phoenix && "
                    ".venv-phoenix/bin/pip install arize-phoenix==20.26.1 "
                    "(or set RAGAS_TRACE_PHOENIX to its phoenix program)")
    with PhoenixServer(executable, tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def _eventually(check: Callable[[], Any], timeout_s: float = READ_BACK_S) -> Any:
    """``check()``'s value once it stops raising ``AssertionError``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _ns(timestamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(timestamp).timestamp()


def check_project(phoenix: PhoenixServer, project: str, scored: int) -> None:
    """``scored`` RAG roots in ``project`` and no other trace (no evaluation traces),
    each root with its own scores stored as span and trace annotations, each trace as
    long as its root; per-passage document annotations on the retrievers; the
    metrics' annotation configs."""
    def roots() -> list[dict[str, Any]]:
        assert project in phoenix.project_names()
        found = [s for s in phoenix.spans(project)
                 if s["attributes"].get(sc.RAGAS_EVALUATION_STATUS) == "scored"]
        assert len(found) == scored
        return found

    scored_roots = _eventually(roots)
    spans = phoenix.spans(project)
    assert [s for s in spans if s["span_kind"] == sc.KIND_EVALUATOR] == []
    ids = [s["context"]["span_id"] for s in scored_roots]
    trace_ids = [s["context"]["trace_id"] for s in scored_roots]

    def annotations() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        # A gateway sends them after its own export, maybe after the app returned.
        on_spans = [a for a in phoenix.span_annotations(project, ids) if a["name"] in METRICS]
        assert len(on_spans) == scored * len(METRICS)
        on_traces = [a for a in phoenix.trace_annotations(project, trace_ids)
                     if a["name"] in METRICS]
        assert len(on_traces) == scored * len(METRICS)
        return on_spans, on_traces

    found, on_traces = _eventually(annotations)
    by_span: dict[str, dict[str, dict[str, Any]]] = {}
    for annotation in found:
        by_span.setdefault(annotation["span_id"], {})[annotation["name"]] = annotation
    by_trace: dict[str, dict[str, dict[str, Any]]] = {}
    for annotation in on_traces:
        by_trace.setdefault(annotation["trace_id"], {})[annotation["name"]] = annotation
    traces = {t["trace_id"]: t for t in phoenix.traces(project)}
    assert len(traces) == scored  # the app's requests, and only them
    for root in scored_roots:
        mine = by_span[root["context"]["span_id"]]
        assert set(mine) == set(METRICS)  # one per metric, on this very span
        for metric in METRICS:
            annotation = mine[metric]
            assert annotation["result"]["score"] == pytest.approx(
                root["attributes"][sc.metric_attribute(metric)])
            assert annotation["result"]["label"] == root["attributes"][
                sc.metric_label_attribute(metric)]
            assert annotation["annotator_kind"] == "CODE"  # the local judge
            explained = annotation["result"]["explanation"]
            assert explained and explained != "scored"
            assert by_trace[root["context"]["trace_id"]][metric]["result"][
                "score"] == pytest.approx(annotation["result"]["score"])
        trace = traces[root["context"]["trace_id"]]
        root_s = _ns(root["end_time"]) - _ns(root["start_time"])
        trace_s = _ns(trace["end_time"]) - _ns(trace["start_time"])
        assert trace_s <= root_s * 1.1 + 1e-6, (trace_s, root_s)
    retrievers = [s for s in spans if s["span_kind"] == "RETRIEVER"
                  and s["context"]["trace_id"] in by_trace]
    assert len(retrievers) >= scored
    for retriever in retrievers:
        documents = phoenix.document_annotations(retriever["context"]["span_id"])
        evaluations = [d for d in documents["documentEvaluations"]
                       if d["name"] == "context_relevance"]
        passages = sum(1 for key in retriever["attributes"]
                       if key.startswith("retrieval.documents.")
                       and key.endswith(".document.content"))
        assert passages and sorted(d["documentPosition"] for d in evaluations) == list(
            range(passages))
        assert all(0.0 <= d["score"] <= 1.0 and d["label"] in ("relevant", "irrelevant")
                   for d in evaluations)
        (metrics,) = [m for m in documents["documentRetrievalMetrics"]
                      if m["evaluationName"] == "context_relevance"]
        relevant = any(d["score"] > 0 for d in evaluations)
        assert metrics["hit"] == (1.0 if relevant else 0.0)
    configs = {c["name"]: c for c in phoenix.annotation_configs()}
    for metric in METRICS:
        assert (configs[metric]["type"], configs[metric]["optimization_direction"],
                configs[metric]["lower_bound"], configs[metric]["upper_bound"]) == (
            "CONTINUOUS", "MAXIMIZE", 0.0, 1.0)


def test_setup_writes_annotations_into_the_service_project(
        phoenix: PhoenixServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    from ragas_trace.demo.runner import DemoOptions, run_demo

    monkeypatch.setenv("RAGAS_TRACE_ANNOTATIONS", "phoenix")
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", phoenix.url)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    with caplog.at_level(logging.WARNING):
        result = run_demo(DemoOptions(requests=6, out_dir=None, otlp_endpoint=phoenix.url,
                                      service_name="phoenix-e2e-setup", flush_timeout_s=60))
    assert result.scoring_finished
    assert len(result.rows) == 6
    check_project(phoenix, "phoenix-e2e-setup", scored=6)
    # Only traces go to Phoenix: no metrics export for it to refuse.
    assert not [r for r in caplog.records if "405" in r.getMessage()
                or "UNIMPLEMENTED" in r.getMessage() or "metric" in r.name]


@pytest.fixture
def gateway(phoenix: PhoenixServer) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any]]]:
    env = {**os.environ, "RAGAS_TRACE_RAISE_INTERNAL_ERRORS": "1",
           "PHOENIX_COLLECTOR_ENDPOINT": phoenix.url}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragas_trace.cli.main", "serve",
         "--otlp-grpc", "127.0.0.1:0", "--otlp-http", "127.0.0.1:0",
         "--forward-endpoint", f"127.0.0.1:{phoenix.grpc_port}", "--forward-protocol", "grpc",
         "--judge", "local", "--annotations", "phoenix", "--quiet-s", "0.3",
         "--log-level", "warning", "--shutdown-timeout-s", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise AssertionError(f"gateway did not start: {proc.stderr.read()}")
    try:
        yield proc, json.loads(line)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_serve_writes_annotations_into_the_sender_service_project(
        phoenix: PhoenixServer, gateway: tuple[subprocess.Popen[str], dict[str, Any]],
        rag_chain: Any) -> None:
    from ragas_trace.collectors.langchain import RagasCallbackHandler

    proc, ready = gateway
    service = "phoenix-e2e-serve"
    # What OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=... gives a plain app.
    provider = TracerProvider(resource=Resource.create({
        SERVICE_NAME: service, sc.OPENINFERENCE_PROJECT_NAME: service}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=ready["otlp_http"] + "/v1/traces")))
    handler = RagasCallbackHandler(tracer_provider=provider, app_name="faq")
    for _ in range(4):
        rag_chain.invoke("What is the capital of France?", config={"callbacks": [handler]})
    assert provider.force_flush(10_000)
    provider.shutdown()
    check_project(phoenix, service, scored=4)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(40) == 0


def _outcomes(reader: InMemoryMetricReader) -> dict[str, int]:
    out: dict[str, int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "ragas.annotations":
                    for point in metric.data.data_points:
                        outcome = str(point.attributes["outcome"])
                        out[outcome] = out.get(outcome, 0) + int(point.value)
    return out


def test_a_phoenix_restart_mid_run_loses_nothing_counted_stored(
        phoenix: PhoenixServer, rag_chain: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Last in this module: it restarts the shared Phoenix. Requests before, during
    and after the outage."""
    project = "phoenix-e2e-restart"
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "200")  # export within 0.2 s
    reader = InMemoryMetricReader()
    provider = TracerProvider(resource=Resource.create({
        SERVICE_NAME: project, sc.OPENINFERENCE_PROJECT_NAME: project}))
    rt = ragas_trace.setup(
        service_name=project, judge="local", tracer_provider=provider,
        exporter=OTLPSpanExporter(endpoint=phoenix.url + "/v1/traces", timeout=5),
        meter_provider=MeterProvider(metric_readers=[reader]), annotations="phoenix",
        phoenix_endpoint=phoenix.url, annotation_retry_s=90.0, handle_sigterm=False)
    handler = rt.langchain_handler(app_name="faq")
    outage = threading.Thread(target=phoenix.restart)

    def ask(times: int, pause_s: float) -> None:
        for _ in range(times):
            rag_chain.invoke("What is the capital of France?", config={"callbacks": [handler]})
            time.sleep(pause_s)

    try:
        ask(6, 0.3)
        outage.start()
        for _ in range(240):  # one a second while Phoenix is down (bounded)
            if not outage.is_alive():
                break
            ask(1, 1.0)
        outage.join(60)
        assert not outage.is_alive()
        ask(6, 0.3)
        rt.force_flush(150.0)
    finally:
        rt.shutdown(30.0)
    outcomes = _outcomes(reader)
    assert outcomes.get("stored", 0) > 0
    assert outcomes.get("refused", 0) == 0
    roots = [s for s in phoenix.spans(project)
             if s["attributes"].get(sc.RAGAS_EVALUATION_STATUS) == "scored"]
    span_ids = [s["context"]["span_id"] for s in roots]
    trace_ids = [s["context"]["trace_id"] for s in roots]
    held = [a for a in phoenix.span_annotations(project, span_ids) if a["name"] in METRICS]
    held += [a for a in phoenix.trace_annotations(project, trace_ids) if a["name"] in METRICS]
    documents = sum(
        len(phoenix.document_annotations(s["context"]["span_id"])["documentEvaluations"])
        for s in phoenix.spans(project) if s["span_kind"] == "RETRIEVER")
    # Every annotation counted stored is in Phoenix after the restart, and only those.
    assert len(held) + documents == outcomes["stored"], (outcomes, len(held), documents)
    # Every span Phoenix holds has all its annotations: none lost unseen in a queue.
    assert len(held) == len(roots) * 2 * len(METRICS)
