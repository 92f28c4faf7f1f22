"""A LangChain LCEL RAG chain (retriever | prompt | model | parser) traced and scored
by ragas-trace, with the callback handler passed to one call. Runs offline: a fake
chat model, an in-memory vector store and the local judge.

    python examples/langchain_lcel.py
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace

QUESTION = "What is the capital of France?"

vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
vector_store.add_documents([
    Document("Paris is the capital and largest city of France.", id="paris-1"),
    Document("France is a country in Western Europe.", id="france-1"),
])
retriever = vector_store.as_retriever(search_kwargs={"k": 2})
prompt = ChatPromptTemplate.from_template(
    "Answer from the context.\nContext: {context}\nQuestion: {question}")
llm = FakeListChatModel(responses=["Paris is the capital of France."])


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(doc.page_content for doc in docs)


chain = ({"context": retriever | format_docs, "question": RunnablePassthrough()}
         | prompt | llm | StrOutputParser())


def main() -> None:
    exporter = InMemorySpanExporter()  # in production: OTLP, e.g. exporter="otlp"
    rt = ragas_trace.setup(service_name="lcel-example", judge="local", exporter=exporter)

    answer = chain.invoke(QUESTION, config={"callbacks": [rt.langchain_handler(app_name="faq")]})
    print("answer:", answer)

    rt.force_flush(timeout_s=30)
    for span in exporter.get_finished_spans():
        attrs = span.attributes or {}
        if attrs.get("openinference.span.kind") == "CHAIN":  # the request's root
            print(f"{span.name} (app {attrs['ragas.app.name']}): "
                  f"status={attrs['ragas.evaluation.status']}")
            for metric in ("faithfulness", "answer_relevance", "context_relevance"):
                print(f"  {metric}: {attrs.get('ragas.' + metric)} "
                      f"({attrs.get('ragas.' + metric + '.label')})")
    rt.shutdown(timeout_s=10)


if __name__ == "__main__":
    main()
