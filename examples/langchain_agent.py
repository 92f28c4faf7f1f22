"""A LangChain 1.x RAG agent (``create_agent`` + a retrieval tool, as in the "Build a
RAG agent" tutorial), traced and scored by ragas-trace. Runs offline: a scripted
chat model, an in-memory vector store and the local judge. The README's quick start
is the part between the QUICK START markers, so it runs as pasted.

    pip install -e '.[langgraph,local]'   # in a clone of this repository
    python examples/langchain_agent.py

Real model: change the `vector_store = ...` line (your store and embeddings) and the
`model = ...` line (e.g. `model = "openai:gpt-4o-mini"` with `OPENAI_API_KEY` set);
nothing else changes.
"""

# BEGIN QUICK START
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

spans = InMemorySpanExporter()  # to print the scores below; leave it out to export over OTLP
rt = ragas_trace.setup(service_name="docs-agent", exporter=spans)
QUESTION = "Which plans include phone support?"


class ScriptedModel(FakeMessagesListChatModel):  # replays its responses, takes tools
    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
model = ScriptedModel(responses=[AIMessage("", tool_calls=[{
    "name": "retrieve_context", "args": {"query": QUESTION}, "id": "call-1"}]),
    AIMessage("The Pro and Team plans include phone support.")])
vector_store.add_documents([Document("The Pro and Team plans include phone support."),
                            Document("The Free plan includes email support only.")])


@tool(response_format="content_and_artifact")
def retrieve_context(query: str) -> tuple[str, list[Document]]:
    """Retrieve information to help answer a query."""
    docs = vector_store.similarity_search(query, k=2)
    return "\n\n".join(doc.page_content for doc in docs), docs


agent = create_agent(model, [retrieve_context], system_prompt="Answer from the retrieved context.")
result = agent.invoke({"messages": [{"role": "user", "content": QUESTION}]},
                      config={"callbacks": [rt.langchain_handler()]})
print("answer:", result["messages"][-1].text)

rt.force_flush()  # waits for the background scorer (at most 30 s)
for span in spans.get_finished_spans():
    if span.attributes.get("openinference.span.kind") == "CHAIN":  # the request's root span
        print(span.name, {key: span.attributes.get(f"ragas.{key}") for key in (
            "evaluation.status", "faithfulness", "answer_relevance", "context_relevance")})
rt.shutdown()  # scores what is still held, flushes; also registered at exit
# END QUICK START
