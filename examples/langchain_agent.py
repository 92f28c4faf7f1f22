"""A LangChain 1.x RAG agent (``create_agent`` + a retrieval tool, as in the "Build a
RAG agent" tutorial), traced and scored by ragas-trace. Runs offline: a scripted
chat model, an in-memory vector store and the local judge.

    python examples/langchain_agent.py
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.collectors.langchain import instrument

QUESTION = "When was the Eiffel Tower completed?"

vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
vector_store.add_documents([
    Document("The Eiffel Tower was completed in 1889 for the World's Fair.", id="eiffel-1"),
    Document("The Eiffel Tower is 330 metres tall and stands in Paris.", id="eiffel-2"),
])


@tool(response_format="content_and_artifact")
def retrieve_context(query: str) -> tuple[str, list[Document]]:
    """Retrieve information to help answer a query."""
    docs = vector_store.similarity_search(query, k=2)
    return "\n\n".join(d.page_content for d in docs), docs


class ToolCallingFake(FakeMessagesListChatModel):
    """Replays its responses; accepts tools as a real chat model does."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def main() -> None:
    exporter = InMemorySpanExporter()  # in production: OTLP, e.g. exporter="otlp"
    rt = ragas_trace.setup(service_name="agent-example", judge="local", exporter=exporter)
    instrument(rt.tracer_provider)  # every LangChain / LangGraph run in the process

    model = ToolCallingFake(responses=[
        AIMessage("", tool_calls=[{"name": "retrieve_context", "args": {"query": QUESTION},
                                   "id": "call-1"}]),
        AIMessage("The Eiffel Tower was completed in 1889."),
    ])
    agent = create_agent(model, [retrieve_context],
                         system_prompt="Use the tool, then answer from what it returns.")
    result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]},
                          {"configurable": {"thread_id": "example-thread"}})
    print("answer:", result["messages"][-1].text)

    rt.force_flush(timeout_s=30)
    spans = exporter.get_finished_spans()
    for span in spans:
        attrs = span.attributes or {}
        if attrs.get("openinference.span.kind") == "CHAIN":  # the request's root
            print(f"{span.name}: status={attrs['ragas.evaluation.status']} "
                  f"session={attrs.get('session.id')}")
            for metric in ("faithfulness", "answer_relevance", "context_relevance"):
                print(f"  {metric}: {attrs.get('ragas.' + metric)}")
    print("spans:", ", ".join(sorted(str((s.attributes or {}).get("openinference.span.kind"))
                                     for s in spans)))
    rt.shutdown(timeout_s=10)


if __name__ == "__main__":
    main()
