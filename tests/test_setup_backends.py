"""setup() facing Phoenix and Langfuse: the Langfuse OTLP headers built from its keys,
no OTLP metrics to a traces-only backend, and no evaluation traces in the app's
Phoenix project unless asked for. Against a loopback fake of both APIs."""

from __future__ import annotations

import base64
import logging
import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.config import Settings
from ragas_trace.exporters.annotations.langfuse import basic_auth
from ragas_trace.setup import otlp_metrics_wanted
from ragas_trace.testing.annotation_server import LANGFUSE_OTLP, FakeAnnotationServer
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

# Keys as long as Langfuse's: their base64 is over 76 characters, where `base64`
# on a shell wraps the line (and the OTel SDK then drops every header).
PUBLIC = f"pk-lf-{uuid.UUID(int=1)}"
SECRET = f"sk-lf-{uuid.UUID(int=2)}"
_OTLP_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
             "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS",
             "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_PROTOCOL",
             "RAGAS_TRACE_ANNOTATIONS", "PHOENIX_COLLECTOR_ENDPOINT", "LANGFUSE_PUBLIC_KEY",
             "LANGFUSE_SECRET_KEY", "RAGAS_TRACE_EVALUATION_SPANS",
             "RAGAS_TRACE_EVALUATION_PROJECT")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _OTLP_ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def fake() -> Iterator[FakeAnnotationServer]:
    with FakeAnnotationServer(langfuse_keys=(PUBLIC, SECRET)) as server:
        yield server


def test_langfuse_otlp_export_carries_auth_from_the_keys_and_the_ingestion_version(
        clean_env, fake):
    assert len(base64.b64encode(f"{PUBLIC}:{SECRET}".encode())) > 76
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fake.url + "/api/public/otel")
    clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=search")
    clean_env.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC)
    clean_env.setenv("LANGFUSE_SECRET_KEY", SECRET)
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="otlp",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    try:
        rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(10.0)
    finally:
        rt.shutdown(5.0)
    assert fake.rejected == []
    (request, *_) = fake.requests(LANGFUSE_OTLP)
    assert request.headers["authorization"] == basic_auth(PUBLIC, SECRET)
    assert "\n" not in request.headers["authorization"]
    assert request.headers["x-langfuse-ingestion-version"] == "4"
    assert request.headers["x-team"] == "search"  # the user's own headers are kept


def test_a_header_the_user_gives_wins(clean_env, fake):
    clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                     fake.url + "/api/public/otel/v1/traces")
    clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS",
                     "Authorization=" + basic_auth(PUBLIC, SECRET).replace(" ", "%20"))
    clean_env.setenv("LANGFUSE_PUBLIC_KEY", "pk-other")
    clean_env.setenv("LANGFUSE_SECRET_KEY", "sk-other")
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="otlp",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    try:
        rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(10.0)
    finally:
        rt.shutdown(5.0)
    assert fake.rejected == [] and fake.requests(LANGFUSE_OTLP)


def test_no_otlp_metrics_to_a_traces_only_backend_unless_asked(clean_env, caplog):
    collector = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert otlp_metrics_wanted(Settings.load(env={}), env=collector)
    assert not otlp_metrics_wanted(Settings.load(env={}), env={})
    phoenix = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://px:6006",
               "PHOENIX_COLLECTOR_ENDPOINT": "http://px:6006"}
    assert not otlp_metrics_wanted(Settings.load(env=phoenix), env=phoenix)
    # Phoenix's default address, as its docs give it.
    assert not otlp_metrics_wanted(Settings.load(env={}), env={
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:6006/v1/traces"})
    langfuse = {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://cloud.langfuse.com/api/public/otel"}
    assert not otlp_metrics_wanted(Settings.load(env={}), env=langfuse)
    annotated = {**collector, "RAGAS_TRACE_ANNOTATIONS": "phoenix"}
    assert not otlp_metrics_wanted(Settings.load(env=annotated), env=annotated)
    # The demo's explicit endpoint counts too.
    assert not otlp_metrics_wanted(Settings.load(env={}), "http://localhost:6006", env={})
    asked = {**annotated, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://127.0.0.1:4318"}
    assert otlp_metrics_wanted(Settings.load(env=asked), env=asked)
    # Through setup(): no OTLP metrics pipeline at all, and it says why.
    clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    with caplog.at_level(logging.INFO, logger="ragas_trace"):
        rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="none", annotations="phoenix",
                               phoenix_endpoint="http://127.0.0.1:9",
                               tracer_provider=TracerProvider(), handle_sigterm=False)
    try:
        assert not isinstance(rt.meter_provider, SdkMeterProvider)
    finally:
        rt.shutdown(2.0)
    assert "takes traces only" in caplog.text


def _exported(**settings: object) -> list:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({
        "service.name": "bot", sc.OPENINFERENCE_PROJECT_NAME: "bot"}))
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter=exporter, tracer_provider=provider,
                           handle_sigterm=False, phoenix_endpoint="http://127.0.0.1:9",
                           annotation_retry_s=0.0, **settings)
    try:
        rag_request(provider.get_tracer("t"))
        assert rt.processor.scorer.drain(10.0)
        rt.force_flush(10.0)
    finally:
        rt.shutdown(5.0)
    return list(exporter.get_finished_spans())


def test_phoenix_annotations_keep_evaluation_traces_out_of_the_app_project(clean_env):
    spans = _exported(annotations="phoenix")
    assert [s.name for s in spans if s.name == "ragas.evaluation"] == []
    (root,) = [s for s in spans if s.name == "rag"]
    assert sc.RAGAS_EVALUATION_TRACE_ID not in (root.attributes or {})
    # Kept where no annotations carry the scores (Tempo, Jaeger)...
    assert [s.name for s in _exported() if s.name == "ragas.evaluation"] == [
        "ragas.evaluation"]
    # ... or when asked for.
    kept = _exported(annotations="phoenix", evaluation_spans=True)
    (evaluation,) = [s for s in kept if s.name == "ragas.evaluation"]
    assert evaluation.resource.attributes[sc.OPENINFERENCE_PROJECT_NAME] == "bot"


def test_evaluation_traces_can_go_to_a_project_of_their_own(clean_env):
    spans = _exported(annotations="phoenix", evaluation_project="bot-evaluations")
    (evaluation,) = [s for s in spans if s.name == "ragas.evaluation"]
    assert evaluation.resource.attributes[sc.OPENINFERENCE_PROJECT_NAME] == "bot-evaluations"
    assert evaluation.resource.attributes["service.name"] == "bot"
    (root,) = [s for s in spans if s.name == "rag"]
    assert root.resource.attributes[sc.OPENINFERENCE_PROJECT_NAME] == "bot"
    assert root.attributes[sc.RAGAS_EVALUATION_TRACE_ID] == f"{evaluation.context.trace_id:032x}"


def test_phoenix_annotations_without_a_project_say_it_is_the_default_one(clean_env, caplog):
    def said(**kwargs: object) -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="ragas_trace"):
            rt = ragas_trace.setup(service_name="bot", judge=ScriptedJudge(),
                                   tracer_provider=TracerProvider(resource=Resource(
                                       dict(kwargs.pop("resource", {})))),  # type: ignore[arg-type]
                                   exporter=InMemorySpanExporter(), **kwargs)
        rt.shutdown(5)
        return [r.getMessage() for r in caplog.records if "'default' project" in r.getMessage()]

    [line] = said(annotations="phoenix")
    assert "RAGAS_TRACE_PROJECT_FROM_SERVICE" in line and "'bot'" in line
    assert said(annotations="phoenix",
                resource={sc.OPENINFERENCE_PROJECT_NAME: "bot"}) == []
    assert said() == []
