"""A LangChain LCEL RAG chain (retriever | prompt | model | parser) traced and scored
by ragas-trace, with the callback handler passed to one call. Runs offline: a fake
chat model, an in-memory vector store and the local judge. The README's quick start
is the part between the QUICK START markers, so it runs as pasted.

    pip install -e '.[demo]'   # in a clone of this repository
    python examples/langchain_lcel.py

Real model: change the `vector_store = ...` line (your store and embeddings, e.g.
`InMemoryVectorStore(OpenAIEmbeddings())`) and the `model = ...` line (e.g.
`init_chat_model("openai:gpt-4o-mini")`); nothing else changes.
"""

# BEGIN QUICK START
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace

spans = InMemorySpanExporter()  # to print the scores below; leave it out to export over OTLP
rt = ragas_trace.setup(service_name="faq-bot", exporter=spans)

vector_store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
vector_store.add_documents([Document("The Pro and Team plans include phone support."),
                            Document("The Free plan includes email support only.")])
model = FakeListChatModel(responses=["The Pro and Team plans include phone support."])

prompt = ChatPromptTemplate.from_template(
    "Answer from the context.\n{context}\n\nQuestion: {question}")
retriever = vector_store.as_retriever(search_kwargs={"k": 2})
chain = ({"context": retriever | (lambda docs: "\n\n".join(d.page_content for d in docs)),
          "question": RunnablePassthrough()} | prompt | model | StrOutputParser())
answer = chain.invoke("Which plans include phone support?",
                      config={"callbacks": [rt.langchain_handler(app_name="faq")]})
print("answer:", answer)

rt.force_flush()  # waits for the background scorer (at most 30 s)
for span in spans.get_finished_spans():
    if span.attributes.get("openinference.span.kind") == "CHAIN":  # the request's root span
        print(span.name, {key: span.attributes.get(f"ragas.{key}") for key in (
            "evaluation.status", "faithfulness", "answer_relevance", "context_relevance")})
rt.shutdown()  # scores what is still held, flushes; also registered at exit
# END QUICK START
