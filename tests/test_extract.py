import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.extract import answer_of, extract_record, find_root, question_of
from ragas_trace.testing import InMemoryTracing


def _openinference_trace(tracing: InMemoryTracing) -> None:
    tracer = tracing.tracer
    with tracer.start_as_current_span("http.request"):
        with tracer.start_as_current_span("RetrievalQA") as root:
            root.set_attribute(sc.SPAN_KIND, "CHAIN")
            root.set_attribute(sc.INPUT_VALUE, json.dumps({"question": "Who built it?"}))
            root.set_attribute(sc.INPUT_MIME_TYPE, sc.MIME_JSON)
            with tracer.start_as_current_span("inner") as inner:
                inner.set_attribute(sc.SPAN_KIND, "CHAIN")
                inner.set_attribute(sc.INPUT_VALUE, "inner input")
                with tracer.start_as_current_span("retriever") as ret:
                    ret.set_attribute(sc.SPAN_KIND, "RETRIEVER")
                    ret.set_attribute(sc.document_key(0, sc.DOCUMENT_CONTENT), "Eiffel built it.")
                    ret.set_attribute(sc.document_key(0, sc.DOCUMENT_ID), "d1")
                    ret.set_attribute(sc.document_key(0, sc.DOCUMENT_SCORE), 0.9)
                    ret.set_attribute(sc.document_key(0, sc.DOCUMENT_METADATA), '{"src": "w"}')
                    ret.set_attribute(sc.document_key(1, sc.DOCUMENT_CONTENT), "It is tall.")
                with tracer.start_as_current_span("llm") as llm:
                    llm.set_attribute(sc.SPAN_KIND, "LLM")
                    llm.set_attribute(sc.LLM_TOKEN_COUNT_PROMPT, 12)
                    llm.set_attribute(sc.LLM_TOKEN_COUNT_COMPLETION, 3)
            root.set_attribute(sc.OUTPUT_VALUE, json.dumps({"answer": "Gustave Eiffel."}))
    with tracer.start_as_current_span("unrelated-retriever") as other:
        other.set_attribute(sc.SPAN_KIND, "RETRIEVER")
        other.set_attribute(sc.document_key(0, sc.DOCUMENT_CONTENT), "not this request")


def test_openinference_trace_gives_the_outer_chain_and_its_passages() -> None:
    tracing = InMemoryTracing()
    _openinference_trace(tracing)
    spans = tracing.spans()
    root = find_root(spans)
    assert root is not None and root.name == "RetrievalQA"
    record = extract_record(spans)
    assert record is not None
    assert record.question == "Who built it?"
    assert record.answer == "Gustave Eiffel."
    assert record.context_texts == ["Eiffel built it.", "It is tall."]
    first = record.contexts[0]
    assert (first.id, first.score, first.metadata) == ("d1", 0.9, {"src": "w"})
    assert (record.prompt_tokens, record.completion_tokens) == (12, 3)
    assert record.span_id == root.context.span_id
    assert record.trace_id == root.context.trace_id


def test_openllmetry_trace() -> None:
    tracing = InMemoryTracing()
    tracer = tracing.tracer
    with tracer.start_as_current_span("rag.workflow") as root:
        root.set_attribute(sc.TRACELOOP_SPAN_KIND, "workflow")
        root.set_attribute(sc.TRACELOOP_ENTITY_INPUT,
                           json.dumps({"inputs": {"question": "What causes tides?"}}))
        with tracer.start_as_current_span("VectorStoreRetriever.task") as ret:
            ret.set_attribute(sc.TRACELOOP_SPAN_KIND, "task")
            ret.set_attribute(sc.TRACELOOP_ENTITY_NAME, "VectorStoreRetriever")
            ret.set_attribute(sc.TRACELOOP_ENTITY_OUTPUT, json.dumps({"outputs": [
                {"kwargs": {"page_content": "The Moon causes tides.", "metadata": {"p": 1}}}]}))
        root.set_attribute(sc.TRACELOOP_ENTITY_OUTPUT, json.dumps({"outputs": "The Moon."}))
    record = extract_record(tracing.spans())
    assert record is not None
    assert record.question == "What causes tides?"
    assert record.answer == "The Moon."
    assert record.context_texts == ["The Moon causes tides."]


def test_openllmetry_llamaindex_query_engine_trace() -> None:
    """OpenLLMetry's LlamaIndex spans: bound arguments in, NodeWithScore JSON strings out."""
    tracing = InMemoryTracing()
    tracer = tracing.tracer
    with tracer.start_as_current_span("RetrieverQueryEngine.workflow") as root:
        root.set_attribute(sc.TRACELOOP_SPAN_KIND, "workflow")
        root.set_attribute(sc.TRACELOOP_ENTITY_NAME, "RetrieverQueryEngine.workflow")
        root.set_attribute(sc.TRACELOOP_ENTITY_INPUT, json.dumps(
            {"str_or_query_bundle": {"query_str": "What causes tides?", "embedding": None}}))
        with tracer.start_as_current_span("VectorIndexRetriever.task") as ret:
            ret.set_attribute(sc.TRACELOOP_SPAN_KIND, "task")
            ret.set_attribute(sc.TRACELOOP_ENTITY_NAME, "VectorIndexRetriever.task")
            ret.set_attribute(sc.TRACELOOP_ENTITY_OUTPUT, json.dumps([json.dumps(
                {"node": {"id_": "n1", "text": "The Moon causes tides.", "metadata": {"p": 1}},
                 "score": 0.75, "class_name": "NodeWithScore"})]))
        root.set_attribute(sc.TRACELOOP_ENTITY_OUTPUT,
                           json.dumps({"response": "The Moon.", "metadata": None}))
    record = extract_record(tracing.spans())
    assert record is not None
    assert record.question == "What causes tides?"
    assert record.answer == "The Moon."
    assert record.context_texts == ["The Moon causes tides."]
    assert (record.contexts[0].id, record.contexts[0].score) == ("n1", 0.75)
    assert record.contexts[0].metadata == {"p": 1}


def test_no_question_no_record() -> None:
    tracing = InMemoryTracing()
    with tracing.tracer.start_as_current_span("x") as span:
        span.set_attribute(sc.SPAN_KIND, "CHAIN")
    assert extract_record(tracing.spans()) is None
    assert trace.get_current_span() is trace.INVALID_SPAN


@pytest.mark.parametrize("state", [
    {"messages": [{"role": "user", "content": "Where is city3?"}]},
    {"messages": [{"type": "human", "content": [{"type": "text", "text": "Where is city3?"}]}]},
    {"messages": [["user", "Where is city3?"]]},
    {"messages": [{"lc": 1, "type": "constructor", "id": ["langchain", "HumanMessage"],
                   "kwargs": {"content": "Where is city3?"}}]},
    {"inputs": {"messages": [{"role": "user", "content": "Earlier"},
                             {"role": "assistant", "content": "Reply"},
                             {"role": "user", "content": "Where is city3?"}]}},
])
def test_question_from_a_serialised_message_state(state: Any) -> None:
    span = ReadableSpan("LangGraph", attributes={sc.SPAN_KIND: sc.KIND_CHAIN,
                                                 sc.INPUT_VALUE: json.dumps(state)})
    assert question_of(span) == "Where is city3?"


def test_answer_from_a_serialised_message_state_skips_tool_calls() -> None:
    call = {"type": "ai", "content": "", "tool_calls": [{"name": "t", "args": {}, "id": "1"}]}
    done = {"messages": [{"type": "human", "content": "q"}, call,
                         {"type": "tool", "content": "r"}, {"type": "ai", "content": "done"}]}
    for state, answer in ((done, "done"), ({"messages": done["messages"][:2]}, "")):
        span = ReadableSpan("LangGraph", attributes={sc.SPAN_KIND: sc.KIND_CHAIN,
                                                     sc.OUTPUT_VALUE: json.dumps(state)})
        assert answer_of(span) == answer
