"""A LangGraph RAG app (``StateGraph`` retrieve -> generate, as in the "Build a RAG
app" tutorial): the retrieve node calls ``similarity_search`` and writes the
Documents into the state, which is where ragas-trace finds the passages. Runs
offline: a fake chat model, an in-memory vector store and the local judge.

    pip install -e '.[langgraph,local]'   # in a clone of this repository
    python examples/langgraph_rag.py
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.vectorstores import InMemoryVectorStore
from langgraph.graph import START, StateGraph
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.collectors.langchain import instrument

QUESTION = "How tall is the Eiffel Tower?"

vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
vector_store.add_documents([
    Document("The Eiffel Tower is 330 metres tall and stands in Paris.", id="eiffel-2"),
    Document("The Eiffel Tower was completed in 1889 for the World's Fair.", id="eiffel-1"),
])
prompt = ChatPromptTemplate.from_template(
    "Answer from the context.\nContext: {context}\nQuestion: {question}")
llm = FakeListChatModel(responses=["The Eiffel Tower is 330 metres tall."])


class State(TypedDict):
    question: str
    context: list[Document]
    answer: str


def retrieve(state: State) -> dict[str, Any]:
    return {"context": vector_store.similarity_search(state["question"], k=2)}


def generate(state: State) -> dict[str, Any]:
    context = "\n\n".join(doc.page_content for doc in state["context"])
    response = llm.invoke(prompt.invoke({"question": state["question"], "context": context}))
    return {"answer": response.content}


def main() -> None:
    exporter = InMemorySpanExporter()  # in production: OTLP, e.g. exporter="otlp"
    rt = ragas_trace.setup(service_name="langgraph-example", judge="local", exporter=exporter)
    instrument(rt.tracer_provider)

    graph_builder = StateGraph(State).add_sequence([retrieve, generate])
    graph_builder.add_edge(START, "retrieve")
    graph = graph_builder.compile()
    for step in graph.stream({"question": QUESTION}, stream_mode="updates"):
        print("step:", ", ".join(step))

    rt.force_flush(timeout_s=30)
    spans = exporter.get_finished_spans()
    for span in spans:
        attrs = span.attributes or {}
        if attrs.get("openinference.span.kind") == "CHAIN":  # the request's root
            print(f"{span.name}: question={attrs['input.value']!r} "
                  f"answer={attrs['output.value']!r}")
            print(f"  status: {attrs['ragas.evaluation.status']}")
            for metric in ("faithfulness", "answer_relevance", "context_relevance"):
                print(f"  {metric}: {attrs.get('ragas.' + metric)}")
    print("spans:", ", ".join(sorted(str((s.attributes or {}).get("openinference.span.kind"))
                                     for s in spans)))
    rt.shutdown(timeout_s=10)


if __name__ == "__main__":
    main()
