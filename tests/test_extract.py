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


def _documents(span: Any, prefix: str, docs: list[tuple[str, str]]) -> None:
    for i, (doc_id, text) in enumerate(docs):
        span.set_attribute(sc.document_key(i, sc.DOCUMENT_ID, prefix), doc_id)
        span.set_attribute(sc.document_key(i, sc.DOCUMENT_CONTENT, prefix), text)


def _retrieve(tracing: InMemoryTracing, name: str, docs: list[tuple[str, str]],
              discarded: str | None = None) -> None:
    with tracing.tracer.start_as_current_span(name) as span:
        span.set_attribute(sc.SPAN_KIND, sc.KIND_RETRIEVER)
        _documents(span, sc.RETRIEVAL_DOCUMENTS, docs)
        if discarded is not None:
            span.set_attribute(sc.RAGAS_RETRIEVAL_DISCARDED, discarded)


def _rerank(tracing: InMemoryTracing, name: str, docs: list[tuple[str, str]],
            discarded: str | None = None) -> None:
    """A RERANKER span as OpenInference's LlamaIndex instrumentation makes for a node
    postprocessor (its input documents are left out: they do not matter here)."""
    with tracing.tracer.start_as_current_span(name) as span:
        span.set_attribute(sc.SPAN_KIND, sc.KIND_RERANKER)
        _documents(span, sc.RERANKER_OUTPUT_DOCUMENTS, docs)
        if discarded is not None:
            span.set_attribute(sc.RAGAS_RETRIEVAL_DISCARDED, discarded)


FOUR = [("a", "A."), ("b", "B."), ("c", "C."), ("d", "D.")]


def _record(tracing: InMemoryTracing, body: Any) -> list[str]:
    with tracing.tracer.start_as_current_span("query") as root:
        root.set_attribute(sc.SPAN_KIND, sc.KIND_CHAIN)
        root.set_attribute(sc.INPUT_VALUE, "Which?")
        body()
    record = extract_record(tracing.spans())
    assert record is not None
    return record.context_texts


def test_a_reranker_output_replaces_what_was_retrieved() -> None:
    tracing = InMemoryTracing()

    def body() -> None:
        _retrieve(tracing, "retrieve", FOUR)
        _rerank(tracing, "SimilarityPostprocessor._postprocess_nodes", FOUR[:3])
        _rerank(tracing, "LLMRerank._postprocess_nodes", [FOUR[2], FOUR[0]])

    # The last of a chain of postprocessors is what the synthesizer was given.
    assert _record(tracing, body) == ["C.", "A."]


def test_a_reranker_replaces_only_the_branch_it_reranked() -> None:
    tracing = InMemoryTracing()

    def body() -> None:
        with tracing.tracer.start_as_current_span("tool-1"):
            _retrieve(tracing, "retrieve", FOUR[:2])
        with tracing.tracer.start_as_current_span("tool-2"):
            _retrieve(tracing, "retrieve", FOUR[2:])
            _rerank(tracing, "cut", FOUR[3:])
        # Parallel branches under one parent: each reranker replaces its own retrieval.
        _retrieve(tracing, "retrieve-x", [("x1", "X1."), ("x2", "X2.")])
        _retrieve(tracing, "retrieve-y", [("y1", "Y1."), ("y2", "Y2.")])
        _rerank(tracing, "cut-y", [("y2", "Y2.")])
        _rerank(tracing, "cut-x", [("x1", "X1.")])

    assert _record(tracing, body) == ["A.", "B.", "D.", "Y2.", "X1."]


def test_a_reranker_that_kept_nothing_leaves_no_passage() -> None:
    tracing = InMemoryTracing()

    def body() -> None:
        _retrieve(tracing, "retrieve", FOUR)
        _rerank(tracing, "SimilarityPostprocessor._postprocess_nodes", [])

    assert _record(tracing, body) == []


def test_a_reranker_matches_passages_by_id_when_it_rewrote_their_text() -> None:
    tracing = InMemoryTracing()

    def body() -> None:
        _retrieve(tracing, "retrieve", FOUR)
        # MetadataReplacementPostProcessor: the same nodes, their text now the window.
        _rerank(tracing, "MetadataReplacementPostProcessor._postprocess_nodes",
                [("a", "Window around A."), ("b", "Window around B.")])

    assert _record(tracing, body) == ["Window around A.", "Window around B."]


def test_a_discarded_retrieval_gives_no_passage_but_is_what_a_reranker_cut() -> None:
    """A retrieval the answer was not generated from (a failed attempt's, one a later
    retrieval replaced) adds nothing; an empty reranker after it replaces it, not the
    group before it."""
    tracing = InMemoryTracing()

    def failed_attempt() -> None:
        _retrieve(tracing, "kept", FOUR[:1])
        _retrieve(tracing, "failed attempt", FOUR[1:3], sc.DISCARDED_FAILED_ATTEMPT)
        _retrieve(tracing, "fallback", FOUR[3:])

    assert _record(tracing, failed_attempt) == ["A.", "D."]

    def graded_out() -> None:
        _retrieve(tracing, "kept", FOUR[:1])
        _retrieve(tracing, "first search", FOUR[1:2], sc.DISCARDED_SUPERSEDED)
        _rerank(tracing, "grade", [])

    tracing.clear()
    assert _record(tracing, graded_out) == ["A."]
