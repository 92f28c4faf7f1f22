"""Three ``ragas-trace serve`` processes behind a router that splits by trace ID the
way the Collector's loadbalancing exporter does; OpenInference-style and
OpenLLMetry-style apps send with the official OTLP exporters."""

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragas_trace import semconv as sc
from ragas_trace.scorer.sampler import trace_id_sampled
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver
from ragas_trace.testing.rag_traces import openinference_request, openllmetry_request, plain_request
from ragas_trace.testing.trace_router import TraceIdRouter

REPLICAS = 3
PER_STYLE = 1000
SAMPLE_RATE = 0.05
ROOTS = {"RunnableSequence", "RetrieverQueryEngine.workflow"}


def _start_gateway(downstream: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    env = {**os.environ, "RAGAS_TRACE_RAISE_INTERNAL_ERRORS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragas_trace.cli.main", "serve",
         "--otlp-grpc", "127.0.0.1:0", "--otlp-http", "127.0.0.1:0",
         "--forward-endpoint", downstream, "--judge", "local",
         "--sample-rate", str(SAMPLE_RATE), "--quiet-s", "0.3", "--max-wait-s", "5",
         "--log-level", "warning", "--shutdown-timeout-s", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(10)
        raise AssertionError(f"gateway did not start: {proc.stderr.read() if proc.stderr else ''}")
    return proc, json.loads(line)


@pytest.fixture
def replicas() -> Iterator[tuple[OtlpGrpcReceiver, list[tuple[subprocess.Popen[str], dict]]]]:
    with OtlpGrpcReceiver() as downstream:
        gateways = [_start_gateway(downstream.endpoint) for _ in range(REPLICAS)]
        try:
            yield downstream, gateways
        finally:
            for proc, _ in gateways:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)


def _sender(endpoint: str, service: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint, insecure=True), max_queue_size=50_000,
        max_export_batch_size=256, schedule_delay_millis=100))
    return provider


def _health(ready: dict[str, Any]) -> dict[str, Any]:
    with urllib.request.urlopen(ready["otlp_http"] + "/health", timeout=5) as response:
        health: dict[str, Any] = json.loads(response.read())
    return health


@pytest.mark.slow
def test_three_replicas_each_trace_once_each_sampled_root_scored_once(replicas: Any) -> None:
    downstream, gateways = replicas
    backends = [ready["otlp_grpc"] for _, ready in gateways]
    with TraceIdRouter(backends) as router:
        openinference = _sender(router.endpoint, "oi-app")
        openllmetry = _sender(router.endpoint, "openllmetry-app")
        for i in range(PER_STYLE):
            openinference_request(openinference.get_tracer("openinference"), i)
            openllmetry_request(openllmetry.get_tracer("traceloop"), i)
            if i % 10 == 0:
                plain_request(openinference.get_tracer("http"), i)
        for provider in (openinference, openllmetry):
            assert provider.force_flush(60_000)
            provider.shutdown()
        sent = PER_STYLE * (5 + 4) + (PER_STYLE // 10) * 2
        assert sum(router.routed.values()) == sent
        assert all(router.routed[b] > sent / (REPLICAS * 3) for b in backends), router.routed
        healths = [_health(ready) for _, ready in gateways]
        assert sum(h["spans_received"] for h in healths) == sent
    for proc, _ in gateways:
        proc.send_signal(signal.SIGTERM)
    for proc, _ in gateways:
        assert proc.wait(60) == 0, proc.stderr.read() if proc.stderr else ""

    spans = downstream.spans()
    evaluations = [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_EVALUATOR]
    app_spans = [s for s in spans if s.attributes.get(sc.SPAN_KIND) != sc.KIND_EVALUATOR]
    ids = Counter((s.trace_id, s.span_id) for s in app_spans)
    assert len(app_spans) == sent
    assert max(ids.values()) == 1  # every span exactly once
    roots = [s for s in app_spans if s.name in ROOTS]
    assert len(roots) == 2 * PER_STYLE
    sampled = {r.span_id for r in roots if trace_id_sampled(int(r.trace_id, 16), SAMPLE_RATE)}
    assert sampled  # the sample is not empty
    statuses = Counter(r.attributes[sc.RAGAS_EVALUATION_STATUS] for r in roots
                       if r.span_id in sampled)
    assert statuses == {"scored": len(sampled)}
    assert all(r.attributes[sc.RAGAS_EVALUATION_STATUS] == "not_sampled"
               for r in roots if r.span_id not in sampled)
    assert all(0.0 <= r.attributes[sc.RAGAS_FAITHFULNESS] <= 1.0
               for r in roots if r.span_id in sampled)
    # One evaluation span per scored root, linked to it.
    linked = Counter(link[1] for e in evaluations for link in e.links)
    assert set(linked) == sampled
    assert max(linked.values()) == 1
