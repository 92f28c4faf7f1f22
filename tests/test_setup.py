"""Settings resolution (keyword > environment > default) and setup()'s choices."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.config import SETTINGS, Settings, settings_table_markdown
from ragas_trace.pipeline import content_policy, make_judge
from ragas_trace.setup import choose_downstream
from ragas_trace.testing.scripted_judge import ScriptedJudge

SETTINGS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "settings.md"


def test_keyword_beats_environment_beats_default():
    env = {"RAGAS_TRACE_SAMPLE_RATE": "0.25", "RAGAS_TRACE_CONCURRENCY": "3"}
    settings = Settings.load(env=env, concurrency=5)
    assert settings.sample_rate == 0.25
    assert settings.concurrency == 5
    assert settings.hold_timeout_s == 30.0
    assert settings.effective_score_timeout_s == 30.0
    assert Settings.load(env={}, hold_timeout_s=2).effective_score_timeout_s == 2.0


def test_a_bad_keyword_raises_naming_it():
    with pytest.raises(ValueError, match="'sample_rate'"):
        Settings.load(env={}, sample_rate=1.5)
    with pytest.raises(ValueError, match="'queue_size'"):
        Settings.load(env={}, queue_size=0)
    with pytest.raises(ValueError, match="'judge'"):
        Settings.load(env={}, judge="gpt")
    with pytest.raises(TypeError, match="sample_ratio"):
        Settings.load(env={}, sample_ratio=0.5)


def test_a_bad_environment_value_logs_and_falls_back(caplog):
    env = {"RAGAS_TRACE_SAMPLE_RATE": "lots", "RAGAS_TRACE_EVALUATION_SPANS": "nope",
           "RAGAS_TRACE_CONTENT": "DROP", "RAGAS_TRACE_METRICS_PORT": "99999"}
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        settings = Settings.load(env=env)
    assert settings.sample_rate == 1.0
    assert settings.evaluation_spans is None and settings.emit_evaluation_spans  # auto
    assert settings.content == "drop"  # case-insensitive, valid
    assert settings.metrics_port is None
    logged = caplog.text
    assert "RAGAS_TRACE_SAMPLE_RATE" in logged and "RAGAS_TRACE_METRICS_PORT" in logged


def test_setup_raises_naming_a_bad_argument():
    with pytest.raises(ValueError, match="'hold_timeout_s'"):
        ragas_trace.setup(hold_timeout_s=-1, tracer_provider=TracerProvider())
    with pytest.raises(ValueError, match="'exporter'"):
        ragas_trace.setup(exporter=42, tracer_provider=TracerProvider())  # type: ignore[arg-type]


def test_setup_reads_the_environment(monkeypatch):
    monkeypatch.setenv("RAGAS_TRACE_SAMPLE_RATE", "0.5")
    monkeypatch.setenv("RAGAS_TRACE_HOLD_TIMEOUT_S", "3")
    monkeypatch.setenv("RAGAS_TRACE_THRESHOLD_FAITHFULNESS", "0.9")
    rt = ragas_trace.setup(judge=ScriptedJudge(), tracer_provider=TracerProvider(),
                           exporter=InMemorySpanExporter(), queue_size=7)
    try:
        assert rt.settings.sample_rate == 0.5
        assert rt.processor.sampler.rate == 0.5
        assert rt.processor.hold_timeout_s == 3.0
        assert rt.processor.thresholds["faithfulness"] == 0.9
        assert rt.pipeline.scorer.queue_size == 7
    finally:
        assert rt.shutdown(timeout_s=2)
        assert rt.shutdown(timeout_s=2)


def test_default_exporter_choice(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    auto = Settings.load(env={})
    assert choose_downstream(auto, None, joined=False) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    assert isinstance(choose_downstream(auto, None, joined=False), OTLPSpanExporter)
    # an app that already exports (opentelemetry-instrument) is not exported twice
    assert choose_downstream(auto, None, joined=True) is None
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    assert isinstance(choose_downstream(auto, None, joined=False), GrpcSpanExporter)
    console = Settings.load(env={}, exporter="console")
    assert isinstance(choose_downstream(console, None, joined=True), ConsoleSpanExporter)
    mine = InMemorySpanExporter()
    assert choose_downstream(auto, mine, joined=True) is mine


def test_judge_from_settings(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    assert make_judge(Settings.load(env={}), ScriptedJudge()).name == "scripted"
    openai = make_judge(Settings.load(env={
        "RAGAS_TRACE_JUDGE": "openai", "RAGAS_TRACE_JUDGE_MODEL": "judge-model"}))
    assert openai.name == "openai:judge-model"
    with pytest.raises(ValueError, match="judge"):
        make_judge(Settings.load(env={}), object())  # type: ignore[arg-type]


def test_content_policy_from_settings():
    assert content_policy(Settings.load(env={})).passthrough
    assert content_policy(Settings.load(env={}), redact=str.upper).mode == "redact"
    dropped = content_policy(Settings.load(env={"RAGAS_TRACE_CONTENT": "drop",
                                                "RAGAS_TRACE_MAX_CONTENT_CHARS": "10"}))
    assert (dropped.mode, dropped.max_chars) == ("drop", 10)
    with pytest.raises(ValueError, match="redact"):
        content_policy(Settings.load(env={}, content="redact"))


def test_settings_page_documents_every_setting():
    page = SETTINGS_PAGE.read_text(encoding="utf-8")
    assert settings_table_markdown() in page
    for setting in SETTINGS:
        assert setting.env in page


def test_a_second_setup_on_the_same_provider_warns(caplog):
    provider = TracerProvider()
    first = ragas_trace.setup(judge=ScriptedJudge(), tracer_provider=provider)
    try:
        with caplog.at_level(logging.WARNING, logger="ragas_trace"):
            second = ragas_trace.setup(judge=ScriptedJudge(), tracer_provider=provider)
        second.shutdown(timeout_s=2)
    finally:
        first.shutdown(timeout_s=2)
    assert "setup() called again" in caplog.text


def test_the_metrics_endpoint_binds_localhost_by_default(monkeypatch):
    monkeypatch.delenv("RAGAS_TRACE_METRICS_HOST", raising=False)
    rt = ragas_trace.setup(judge=ScriptedJudge(), metrics_port=0, exporter="none",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    try:
        assert rt.metrics_host == "127.0.0.1"
    finally:
        rt.shutdown(2.0)
    monkeypatch.setenv("RAGAS_TRACE_METRICS_HOST", "0.0.0.0")
    assert Settings.load().metrics_host == "0.0.0.0"
