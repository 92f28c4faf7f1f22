"""The OpenTelemetry evaluation event as log records: setup() sends one
``gen_ai.evaluation.result`` log record per scored metric, in the evaluated root
span's context, to a real OTLP receiver over HTTP and gRPC (the judge: the OpenAI
judge against the loopback OpenAI server); the content policy holds for the
explanation; and nothing is emitted, nor fails, where no logs exporter is set."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.results import Metric
from ragas_trace.testing.openai_server import FakeOpenAIServer
from ragas_trace.testing.otlp_receiver import (
    OtlpGrpcReceiver,
    OtlpHttpReceiver,
    WireLogRecord,
)
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

QUESTION = "Which river flows through the city of Lyon?"
# The fake judge finds the second sentence unsupported by the passage.
ANSWER = "The Rhône and the Saône meet in Lyon. Lyon hosts the annual zebra parade."
DOCS = ("The Rhône and the Saône meet in Lyon, a large city in France.",)
CONTENT_WORDS = ("Rhône", "Saône", "Lyon", "zebra", "parade", "river", "France")
_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_LOGS_EXPORTER", "RAGAS_TRACE_CONTENT",
        "RAGAS_TRACE_EVALUATION_LOGS", "RAGAS_TRACE_ANNOTATIONS")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def _run(server: FakeOpenAIServer, requests: int = 1, **settings: object) -> list[int]:
    judge = OpenAIJudge(base_url=server.base_url, api_key="sk-test")
    rt = ragas_trace.setup(judge=judge, exporter="otlp", tracer_provider=TracerProvider(),
                           handle_sigterm=False, **settings)
    try:
        tracer = rt.tracer_provider.get_tracer("t")
        ids = [rag_request(tracer, QUESTION, ANSWER, DOCS, llm_attributes={
            sc.GEN_AI_RESPONSE_ID: f"chatcmpl-{i}"}) for i in range(requests)]
        assert rt.force_flush(30.0)
    finally:
        assert rt.shutdown(10.0)
    return ids


def _text_of(record: WireLogRecord) -> str:
    return " ".join(str(v) for v in [record.body, *record.attributes.values()])


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_one_record_per_scored_metric_in_the_evaluated_root_spans_context(
        env, judge_server, protocol):
    receiver_type = OtlpHttpReceiver if protocol == "http/protobuf" else OtlpGrpcReceiver
    with receiver_type() as receiver:
        if protocol == "grpc":  # the generic variables
            env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
            env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        else:  # the per-signal ones
            env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint + "/v1/traces")
            env.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint + "/v1/logs")
        ids = _run(judge_server, requests=3)
        roots = {s.span_id: s for s in receiver.spans() if s.name == "rag"}
        logs = receiver.logs()
    assert sorted(roots) == sorted(f"{i:016x}" for i in ids)
    assert len(logs) == 3 * len(Metric)
    for n, span_id in enumerate(f"{i:016x}" for i in ids):
        root = roots[span_id]
        records = [r for r in logs if r.span_id == span_id]
        assert sorted(r.attributes[sc.GEN_AI_EVALUATION_NAME] for r in records) == \
            sorted(str(m) for m in Metric)
        for record in records:
            metric = record.attributes[sc.GEN_AI_EVALUATION_NAME]
            assert record.trace_id == root.trace_id
            assert record.event_name == sc.GEN_AI_EVALUATION_RESULT
            assert record.scope == "ragas_trace"
            assert record.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == \
                root.attributes[f"ragas.{metric}"]
            assert record.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == \
                root.attributes[f"ragas.{metric}.label"]
            assert record.attributes[sc.GEN_AI_EVALUATION_EXPLANATION]
            assert record.attributes[sc.GEN_AI_RESPONSE_ID] == f"chatcmpl-{n}"
            assert record.attributes[sc.RAGAS_EVALUATION_JUDGE] == "openai:gpt-4o-mini"
            assert sc.ERROR_TYPE not in record.attributes


@pytest.mark.parametrize("content", ["keep", "drop"])
def test_the_content_policy_holds_for_the_explanation(env, judge_server, content):
    with OtlpHttpReceiver() as receiver:
        env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        _run(judge_server, content=content)
        logs = receiver.logs()
    assert len(logs) == len(Metric)
    faithfulness = next(r for r in logs
                        if r.attributes[sc.GEN_AI_EVALUATION_NAME] == "faithfulness")
    explanation = faithfulness.attributes[sc.GEN_AI_EVALUATION_EXPLANATION]
    if content == "keep":  # the reviewer's first lead: the unsupported statement
        assert "zebra parade" in explanation
        return
    assert explanation == "1 of 2 statements supported by the context"
    leaked = [(w, r.attributes) for r in logs for w in CONTENT_WORDS if w in _text_of(r)]
    assert leaked == []


def test_no_logs_exporter_configured_no_records_and_no_error(env):
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="none",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    try:
        assert rt.logger_provider is None
        assert rt.processor.evaluation_logs is None
        rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(5.0)
    finally:
        assert rt.shutdown(5.0)


def test_evaluation_logs_false_turns_them_off_where_an_endpoint_is_set(env):
    with OtlpHttpReceiver() as receiver:
        env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        env.setenv("RAGAS_TRACE_EVALUATION_LOGS", "false")
        rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="otlp",
                               tracer_provider=TracerProvider(), handle_sigterm=False)
        try:
            assert rt.logger_provider is None
            rag_request(rt.tracer_provider.get_tracer("t"))
            assert rt.force_flush(5.0)
        finally:
            assert rt.shutdown(5.0)
        assert receiver.spans() and receiver.logs() == []
        assert receiver.log_requests == 0


def test_otel_logs_exporter_none_and_a_traces_only_backend_turn_auto_off(env):
    env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    env.setenv("OTEL_LOGS_EXPORTER", "none")
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="none",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    assert rt.logger_provider is None
    rt.shutdown(2.0)
    env.delenv("OTEL_LOGS_EXPORTER")
    env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://cloud.langfuse.com/api/public/otel")
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="none",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    assert rt.logger_provider is None
    rt.shutdown(2.0)


def test_a_judge_failure_gives_error_type_and_no_score(env):
    exporter = InMemoryLogRecordExporter()
    logs = LoggerProvider(shutdown_on_exit=False)
    logs.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    rt = ragas_trace.setup(judge=ScriptedJudge(mode="fail"), exporter="none",
                           tracer_provider=TracerProvider(), logger_provider=logs,
                           handle_sigterm=False)
    try:
        span_id = rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(5.0)
    finally:
        rt.shutdown(5.0)
    records = [r.log_record for r in exporter.get_finished_logs()]
    assert len(records) == len(Metric)
    for record in records:
        attrs = dict(record.attributes or {})
        assert record.span_id == span_id
        assert attrs[sc.ERROR_TYPE] == "failed"
        assert sc.GEN_AI_EVALUATION_SCORE_VALUE not in attrs
        assert attrs[sc.RAGAS_EVALUATION_JUDGE] == "scripted"
    # A provider passed in is the app's: flushed, not shut down.
    assert logs.force_flush(1000)
