"""Traces shaped like those of other instrumentations, made with any tracer: an
OpenInference LangChain RAG request, an OpenLLMetry (Traceloop) LlamaIndex query
engine request, and a plain non-RAG request. Used by the gateway's tests and
benchmark as senders that are not our own collectors."""

from __future__ import annotations

import json

from opentelemetry.trace import SpanKind, Tracer

from ragas_trace import semconv as sc

_FACTS = (
    ("Who designed the Eiffel Tower?",
     ("Gustave Eiffel's company designed and built the tower.",
      "The tower was finished in 1889 for the World's Fair."),
     "Gustave Eiffel's company designed it."),
    ("What causes ocean tides?",
     ("Tides are caused mainly by the Moon's gravity.", "The Sun has a smaller effect."),
     "Mostly the gravity of the Moon."),
    ("When was the printing press invented?",
     ("Gutenberg built his printing press around 1440.",),
     "Around 1440, by Gutenberg."),
)


def fact(i: int) -> tuple[str, tuple[str, ...], str]:
    """Question, passages and answer of request ``i``."""
    return _FACTS[i % len(_FACTS)]


def openinference_request(tracer: Tracer, i: int) -> None:
    """An HTTP server span over an OpenInference LangChain chain: root CHAIN,
    nested CHAIN, RETRIEVER with ``retrieval.documents.*``, LLM with token counts."""
    question, passages, answer = fact(i)
    with tracer.start_as_current_span("POST /ask", kind=SpanKind.SERVER):
        with tracer.start_as_current_span("RunnableSequence", attributes={
                sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: question,
                sc.INPUT_MIME_TYPE: sc.MIME_TEXT}) as root:
            with tracer.start_as_current_span("RunnableParallel<context,question>", attributes={
                    sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: question}):
                docs: dict[str, str | float] = {}
                for n, text in enumerate(passages):
                    docs[sc.document_key(n, sc.DOCUMENT_CONTENT)] = text
                    docs[sc.document_key(n, sc.DOCUMENT_ID)] = f"doc-{i % 3}-{n}"
                    docs[sc.document_key(n, sc.DOCUMENT_SCORE)] = 0.9 - n / 10
                with tracer.start_as_current_span("VectorStoreRetriever", attributes={
                        sc.SPAN_KIND: sc.KIND_RETRIEVER, sc.INPUT_VALUE: question,
                        sc.GEN_AI_OPERATION_NAME: sc.GEN_AI_OPERATION_RETRIEVAL, **docs}):
                    pass
            with tracer.start_as_current_span("ChatOpenAI", kind=SpanKind.CLIENT, attributes={
                    sc.SPAN_KIND: sc.KIND_LLM, sc.LLM_MODEL_NAME: "gpt-4o-mini",
                    sc.LLM_TOKEN_COUNT_PROMPT: 120, sc.LLM_TOKEN_COUNT_COMPLETION: 12}):
                pass
            root.set_attribute(sc.OUTPUT_VALUE, answer)


def openllmetry_request(tracer: Tracer, i: int) -> None:
    """An OpenLLMetry LlamaIndex query: workflow span with the bound arguments,
    retriever task whose output is NodeWithScore JSON strings, an OpenAI chat span."""
    question, passages, answer = fact(i)
    with tracer.start_as_current_span("RetrieverQueryEngine.workflow", attributes={
            sc.TRACELOOP_SPAN_KIND: "workflow",
            sc.TRACELOOP_ENTITY_NAME: "RetrieverQueryEngine.workflow",
            sc.TRACELOOP_ENTITY_INPUT: json.dumps({"str_or_query_bundle": question})}) as root:
        nodes = [json.dumps({"node": {"id_": f"node-{i % 3}-{n}", "text": text,
                                      "metadata": {"file": "facts.txt"}},
                             "score": 0.8, "class_name": "NodeWithScore"})
                 for n, text in enumerate(passages)]
        with tracer.start_as_current_span("VectorIndexRetriever.task", attributes={
                sc.TRACELOOP_SPAN_KIND: "task",
                sc.TRACELOOP_ENTITY_NAME: "VectorIndexRetriever.task",
                sc.TRACELOOP_ENTITY_OUTPUT: json.dumps(nodes)}):
            pass
        with tracer.start_as_current_span("CompactAndRefine.task", attributes={
                sc.TRACELOOP_SPAN_KIND: "task",
                sc.TRACELOOP_ENTITY_NAME: "CompactAndRefine.task"}):
            with tracer.start_as_current_span("openai.chat", kind=SpanKind.CLIENT, attributes={
                    sc.GEN_AI_SYSTEM: "openai", sc.GEN_AI_REQUEST_MODEL: "gpt-4o-mini",
                    sc.GEN_AI_USAGE_INPUT_TOKENS: 150, sc.GEN_AI_USAGE_OUTPUT_TOKENS: 10}):
                pass
        root.set_attribute(sc.TRACELOOP_ENTITY_OUTPUT, json.dumps({"response": answer}))


def plain_request(tracer: Tracer, i: int) -> None:
    """A request with no RAG in it: an HTTP server span and a database call."""
    with tracer.start_as_current_span("GET /health", kind=SpanKind.SERVER,
                                      attributes={"http.route": "/health"}):
        with tracer.start_as_current_span("SELECT users", kind=SpanKind.CLIENT,
                                          attributes={"db.system": "postgresql", "n": i}):
            pass
