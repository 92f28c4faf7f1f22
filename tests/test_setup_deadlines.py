"""``RagasTrace.force_flush`` / ``shutdown`` with the OTLP backend down: they never
raise, return ``False`` (something was not delivered), count and log the loss."""

from __future__ import annotations

import logging
import socket
import threading

import pytest
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.trace import TracerProvider

import ragas_trace
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge
from ragas_trace.testing.waiting import finishes


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens: connection refused


@pytest.fixture
def backend_down(monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", closed_port_url())
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2")  # the retries left behind end soon
    for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "RAGAS_TRACE_METRICS_PORT"):
        monkeypatch.delenv(name, raising=False)


def otlp_setup(**kwargs):
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="otlp",
                           tracer_provider=TracerProvider(), handle_sigterm=False, **kwargs)
    assert isinstance(rt.meter_provider, SdkMeterProvider)  # our own OTLP metrics pipeline
    return rt


def test_force_flush_and_shutdown_never_raise_and_report_the_loss(backend_down, caplog):
    rt = otlp_setup()
    tracer = rt.tracer_provider.get_tracer("t")
    for _ in range(20):
        rag_request(tracer)
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        assert finishes(lambda: rt.force_flush(1.0)) == [False]
        assert finishes(lambda: rt.shutdown(1.0)) == [False]
    assert "span(s) not exported" in caplog.text


def test_shutdown_past_its_deadline_after_an_overload_does_not_raise(backend_down):
    gate = threading.Event()
    rt = ragas_trace.setup(judge=ScriptedJudge(gate=gate), exporter="otlp",
                           tracer_provider=TracerProvider(), handle_sigterm=False,
                           max_held_spans=50, queue_size=10)
    try:
        tracer = rt.tracer_provider.get_tracer("t")
        for _ in range(200):
            rag_request(tracer)
        assert finishes(lambda: rt.shutdown(0.0)) == [False]
        assert finishes(lambda: rt.force_flush(0.0)) == [False]
    finally:
        gate.set()
