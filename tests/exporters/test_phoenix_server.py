"""Against a real Arize Phoenix server (pip ``arize-phoenix`` in ``.venv-phoenix``, or
the one ``$RAGAS_TRACE_PHOENIX`` names), on 127.0.0.1: scored requests through
``setup()`` (the demo) and through ``ragas-trace serve``, read back through
Phoenix's REST API. Each scored root span must carry one annotation per metric with
its own score, sit in the project named after its service, and its trace's latency
must be the request's, not the scoring's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragas_trace import semconv as sc
from ragas_trace.testing.phoenix_server import PhoenixServer, phoenix_executable

REPO = Path(__file__).resolve().parents[2]
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
READ_BACK_S = 60.0  # Phoenix inserts in the background; annotations retry every 10 s


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
    """``scored`` RAG roots in ``project``, each with its own scores as annotations and
    a trace as long as itself."""
    def roots() -> list[dict[str, Any]]:
        assert project in phoenix.project_names()
        found = [s for s in phoenix.spans(project) if s["span_kind"] != sc.KIND_EVALUATOR
                 and s["attributes"].get(sc.RAGAS_EVALUATION_STATUS) == "scored"]
        assert len(found) == scored
        return found

    scored_roots = _eventually(roots)
    ids = [s["context"]["span_id"] for s in scored_roots]

    def annotations() -> list[dict[str, Any]]:
        found = [a for a in phoenix.span_annotations(project, ids) if a["name"] in METRICS]
        assert len(found) == scored * len(METRICS)
        return found

    by_span: dict[str, dict[str, dict[str, Any]]] = {}
    for annotation in _eventually(annotations):
        by_span.setdefault(annotation["span_id"], {})[annotation["name"]] = annotation
    traces = {t["trace_id"]: t for t in phoenix.traces(project)}
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
            assert annotation["result"]["explanation"]
        trace = traces[root["context"]["trace_id"]]
        root_s = _ns(root["end_time"]) - _ns(root["start_time"])
        trace_s = _ns(trace["end_time"]) - _ns(trace["start_time"])
        assert trace_s <= root_s * 1.1 + 1e-6, (trace_s, root_s)
        # The evaluation record is findable from the request: its own trace, linked.
        evaluation_trace = root["attributes"][sc.RAGAS_EVALUATION_TRACE_ID]
        assert evaluation_trace in traces and evaluation_trace != root["context"]["trace_id"]


def test_setup_writes_annotations_into_the_service_project(
        phoenix: PhoenixServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from ragas_trace.demo.runner import DemoOptions, run_demo

    monkeypatch.setenv("RAGAS_TRACE_ANNOTATIONS", "phoenix")
    monkeypatch.setenv("PHOENIX_COLLECTOR_ENDPOINT", phoenix.url)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    result = run_demo(DemoOptions(requests=6, out_dir=None, otlp_endpoint=phoenix.url,
                                  service_name="phoenix-e2e-setup", flush_timeout_s=60))
    assert result.scoring_finished
    assert len(result.rows) == 6
    check_project(phoenix, "phoenix-e2e-setup", scored=6)


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
