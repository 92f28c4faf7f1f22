"""The LangChain apps bench/langchain_overhead.py times: a fake RAG chain, and an agent
(``create_agent``, two model calls, one retrieval tool). Fakes only; the same work for
every configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough

QUESTION = "What is the capital of France?"
_USAGE = {"input_tokens": 40, "output_tokens": 8, "total_tokens": 48}


class KnowledgeBase(BaseRetriever):
    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=f"Passage {i}: Paris is the capital of France.",
                         id=f"kb-{i}", metadata={"source": f"kb/{i}.md", "score": 0.9 - i / 10})
                for i in range(4)]


class FakeChat(BaseChatModel):
    """Answers; or, as an agent's model, calls the tool first and answers from its result."""

    calls_tool: bool = False

    @property
    def _llm_type(self) -> str:
        return "fake-chat"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if self.calls_tool and not isinstance(messages[-1], ToolMessage):
            message = AIMessage("", usage_metadata=_USAGE, tool_calls=[{
                "name": "search_knowledge_base", "args": {"query": messages[-1].text},
                "id": "call-1"}])
        else:
            message = AIMessage(content="Paris is the capital of France.", usage_metadata=_USAGE)
        return ChatResult(generations=[ChatGeneration(message=message)])


def build_chain() -> Any:
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    docs = KnowledgeBase() | (lambda ds: "\n".join(d.page_content for d in ds))
    return {"context": docs, "question": RunnablePassthrough()} | prompt | FakeChat() \
        | StrOutputParser()


def build_agent() -> Any:
    from langchain.agents import create_agent
    from langchain_core.tools import create_retriever_tool

    tool = create_retriever_tool(KnowledgeBase(), "search_knowledge_base",
                                 "Search the knowledge base.")
    return create_agent(FakeChat(calls_tool=True), [tool], system_prompt="Answer briefly.")


# shape -> (app builder, the input of one request)
SHAPES: dict[str, tuple[Callable[[], Any], Any]] = {
    "chain": (build_chain, QUESTION),
    "agent": (build_agent, {"messages": [{"role": "user", "content": QUESTION}]}),
}
