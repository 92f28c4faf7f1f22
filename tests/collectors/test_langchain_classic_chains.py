"""The pre-agent chain shapes, now in langchain-classic: ``create_retrieval_chain``
and history-aware retrieval. Their dict outputs carry the retrieved Documents again
(``context``): still one retrieval, not two."""

from __future__ import annotations

from typing import Any

import agent_fakes as apps
from langchain_classic.chains import create_history_aware_retriever, create_retrieval_chain
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from span_checks import by_kind
from test_langchain_agents import one_request, passages

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing

ANSWER_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer from the context.\nContext: {context}"),
    MessagesPlaceholder("chat_history", optional=True),
    ("human", "{input}")])


def retrieval_chain(history_aware: bool) -> Any:
    retriever: Any = apps.vector_store().as_retriever(search_kwargs={"k": 2})
    model = apps.ScriptedAgentModel(answer_directly=True)
    if history_aware:
        rephrase = ChatPromptTemplate.from_messages([
            MessagesPlaceholder("chat_history"), ("human", "{input}"),
            ("human", "Rewrite the question to stand alone.")])
        retriever = create_history_aware_retriever(
            apps.ScriptedAgentModel(answer_directly=True), retriever, rephrase)
    return create_retrieval_chain(retriever, create_stuff_documents_chain(model, ANSWER_PROMPT))


def test_create_retrieval_chain(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    result = retrieval_chain(False).invoke({"input": apps.QUESTION},
                                           config={"callbacks": [handler]})

    root, record = one_request(tracing.spans())
    assert root.name == "retrieval_chain"
    assert record.question == apps.QUESTION
    assert record.answer == result["answer"] == f"Answer: {apps.PASSAGE}"
    assert passages(record) == [d.page_content for d in result["context"]]
    assert len(by_kind(tracing.spans(), sc.KIND_RETRIEVER)) == 1
    assert handler.open_runs == 0


def test_history_aware_retrieval(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    history = [HumanMessage("Hello"), AIMessage("Hi, ask me about cities.")]
    result = retrieval_chain(True).invoke({"input": apps.QUESTION, "chat_history": history},
                                          config={"callbacks": [handler]})

    _, record = one_request(tracing.spans())
    assert record.question == apps.QUESTION
    assert record.answer == result["answer"]
    assert len(by_kind(tracing.spans(), sc.KIND_RETRIEVER)) == 1
    assert len(by_kind(tracing.spans(), sc.KIND_LLM)) == 2  # rephrase + answer
    assert len(passages(record)) == 2
