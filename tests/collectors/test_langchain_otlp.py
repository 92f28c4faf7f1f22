"""Once through the real OTLP/HTTP exporter: the attributes as they are on the wire."""

from __future__ import annotations

from langchain_fakes import ANSWER, QUESTION, rag_chain
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver


def test_spans_arrive_over_otlp_http_with_their_attributes() -> None:
    with OtlpHttpReceiver() as receiver:
        provider = TracerProvider(resource=Resource.create({"service.name": "rag-api"}))
        provider.add_span_processor(BatchSpanProcessor(
            OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces", timeout=5)))
        try:
            rag_chain().invoke(QUESTION, config={"callbacks": [
                RagasCallbackHandler(provider, app_name="faq-bot")]})
            assert provider.force_flush(timeout_millis=10_000)
        finally:
            provider.shutdown()
        assert receiver.wait_for(lambda spans: len(spans) == 3, timeout=10)
        spans = {s.attributes[sc.SPAN_KIND]: s for s in receiver.spans()}

    root, retriever, llm = spans[sc.KIND_CHAIN], spans[sc.KIND_RETRIEVER], spans[sc.KIND_LLM]
    assert root.resource["service.name"] == "rag-api"
    assert root.parent_span_id == ""
    assert retriever.parent_span_id == llm.parent_span_id == root.span_id
    assert retriever.trace_id == llm.trace_id == root.trace_id
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER
    assert root.attributes[sc.RAGAS_APP_NAME] == "faq-bot"
    assert root.attributes[sc.RAGAS_FRAMEWORK] == "langchain"
    assert retriever.attributes[sc.GEN_AI_OPERATION_NAME] == "retrieval"
    assert retriever.attributes[sc.document_key(0, sc.DOCUMENT_CONTENT)] == (
        f"Passage one about {QUESTION}.")
    assert retriever.attributes[sc.document_key(0, sc.DOCUMENT_SCORE)] == 0.91
    assert retriever.attributes[sc.document_key(1, sc.DOCUMENT_ID)] == "doc-2"
    assert retriever.attributes["ragas.retrieval.documents_total"] == 2
    assert llm.attributes[sc.LLM_TOKEN_COUNT_PROMPT] == 12
    assert llm.attributes[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert llm.attributes[sc.GEN_AI_REQUEST_MODEL] == "echo-1"
