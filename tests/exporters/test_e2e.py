"""LangChain chain + RagasCallbackHandler + setup(), exported through the real OTLP
exporters to receivers on 127.0.0.1; scores read off the wire and off a Prometheus
scrape."""

from __future__ import annotations

import urllib.request

import pytest
from opentelemetry.sdk.trace import TracerProvider

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.exporters.evaluation_span import SPAN_NAME
from ragas_trace.testing.openai_server import FakeOpenAIServer
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver, WireSpan

QUESTION = "What is the capital of France?"


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def scored_pair(spans: list[WireSpan]) -> tuple[WireSpan, WireSpan] | None:
    roots = [s for s in spans if s.attributes.get(sc.RAGAS_EVALUATION_STATUS) == "scored"]
    evaluations = [s for s in spans if s.name == SPAN_NAME]
    return (roots[0], evaluations[0]) if roots and evaluations else None


def check_wire(spans: list[WireSpan], judge_prefix: str) -> None:
    pair = scored_pair(spans)
    assert pair is not None
    root, evaluation = pair
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    for metric in (sc.RAGAS_FAITHFULNESS, sc.RAGAS_ANSWER_RELEVANCE, sc.RAGAS_CONTEXT_RELEVANCE):
        assert 0.0 <= root.attributes[metric] <= 1.0
        assert root.attributes[metric + ".label"] in ("pass", "fail")
    assert str(root.attributes[sc.RAGAS_EVALUATION_JUDGE]).startswith(judge_prefix)
    assert [s.name for s in spans].count(root.name) == 1  # exported once
    assert {s.attributes.get(sc.SPAN_KIND) for s in spans} >= {"RETRIEVER", "LLM", "EVALUATOR"}
    assert evaluation.links == [(root.trace_id, root.span_id, {})]
    # A trace of its own, so the judge's time does not stretch the request's trace.
    assert evaluation.parent_span_id == ""
    assert evaluation.trace_id != root.trace_id
    assert root.attributes[sc.RAGAS_EVALUATION_TRACE_ID] == evaluation.trace_id
    events = [e for e in evaluation.events if e[0] == sc.GEN_AI_EVALUATION_RESULT]
    assert {e[1][sc.GEN_AI_EVALUATION_NAME] for e in events} == {
        "faithfulness", "answer_relevance", "context_relevance"}


def test_local_judge_over_otlp_http_with_prometheus_metrics(rag_chain):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    with OtlpHttpReceiver() as receiver:
        rt = ragas_trace.setup(
            service_name="support-bot", judge="local", metrics_port=0,
            metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
            exporter=OTLPSpanExporter(endpoint=receiver.endpoint + "/v1/traces"))
        try:
            answer = rag_chain.invoke(QUESTION, config={"callbacks": [
                rt.langchain_handler(app_name="faq")]})
            assert answer == "Paris is the capital of France."
            assert rt.force_flush(timeout_s=30)
            assert rt.metrics_port is not None
            text = scrape(rt.metrics_port)
        finally:
            assert rt.shutdown(timeout_s=10)
        check_wire(receiver.spans(), "local:")
    assert 'ragas_faithfulness_count{app="faq",judge="local:minilm-l6-int8"' in text
    assert 'service="support-bot"' in text
    assert 'ragas_evaluations_total{app="faq"' in text and 'status="scored"' in text


def test_openai_judge_over_otlp_grpc(rag_chain):
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    from ragas_trace.judges.openai_judge import OpenAIJudge

    with FakeOpenAIServer() as server, OtlpGrpcReceiver() as receiver:
        judge = OpenAIJudge(base_url=server.base_url, api_key="sk-test-secret")
        rt = ragas_trace.setup(
            service_name="support-bot", judge=judge, tracer_provider=TracerProvider(),
            exporter=OTLPSpanExporter(endpoint=receiver.endpoint, insecure=True))
        try:
            rag_chain.invoke(QUESTION, config={"callbacks": [rt.langchain_handler()]})
            assert rt.force_flush(timeout_s=30)
        finally:
            assert rt.shutdown(timeout_s=10)
        spans = receiver.spans()
        check_wire(spans, "openai:")
        prompts = [m["content"] for r in server.recorded() if r.path.endswith("/chat/completions")
                   for m in r.body["messages"]]
    root, _ = scored_pair(spans) or pytest.fail("not scored")
    assert root.attributes[sc.RAGAS_FAITHFULNESS] == 1.0
    wire = repr([(s.attributes, s.events, s.resource) for s in spans])
    assert "sk-test-secret" not in wire
    assert prompts and not any(p in wire for p in prompts)  # judge prompts never leave


def test_joining_an_existing_provider_adds_evaluation_spans_without_duplicates(rag_chain):
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    theirs = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(theirs))
    rt = ragas_trace.setup(judge=ragas_trace_judge(), tracer_provider=provider)
    try:
        rag_chain.invoke(QUESTION, config={"callbacks": [rt.langchain_handler()]})
        assert rt.force_flush(timeout_s=10)
    finally:
        rt.shutdown(timeout_s=5)
    spans = theirs.get_finished_spans()
    names = [s.name for s in spans]
    assert len(names) == len(set(names))  # every span once: theirs, not ours too
    (evaluation,) = [s for s in spans if s.name == SPAN_NAME]
    (root,) = [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN]
    assert evaluation.links[0].context.span_id == root.context.span_id
    assert evaluation.attributes["evaluations.0.evaluation.score"] == 0.9


def ragas_trace_judge() -> object:
    from ragas_trace.testing.scripted_judge import ScriptedJudge

    return ScriptedJudge()


def test_metrics_over_otlp_when_an_endpoint_is_configured(monkeypatch, rag_chain):
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragas_trace import providers
    from ragas_trace.testing.scripted_judge import ScriptedJudge

    with OtlpHttpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setattr(providers, "existing_meter_provider", lambda: None)
        rt = ragas_trace.setup(judge=ScriptedJudge(), tracer_provider=TracerProvider(),
                               exporter=InMemorySpanExporter())
        try:
            rag_chain.invoke(QUESTION, config={"callbacks": [rt.langchain_handler()]})
            assert rt.force_flush(timeout_s=10)  # also pushes our metrics
        finally:
            rt.shutdown(timeout_s=5)
        names = receiver.metric_names()
    assert {"ragas.faithfulness", "ragas.evaluations", "ragas.judge.tokens"} <= names
