"""A small RAG chain built from real langchain-core parts and fake models/retrievers,
shared by the LangChain collector tests (and mirrored by bench/langchain_overhead.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnablePassthrough

from ragas_trace._internal_errors import internal_error_counts, reset_internal_error_counts
from ragas_trace.testing import InMemoryTracing

QUESTION = "What is the capital of France?"
ANSWER = f"Answer: {QUESTION}. It is well known."

PROMPT = ChatPromptTemplate.from_template(
    "Answer from the context.\nContext: {context}\nQuestion: {question}")


class EchoRetriever(BaseRetriever):
    """Two passages that quote the query, so a test can tell whose request they serve."""

    docs_for: Callable[[str], Sequence[Any]] | None = None

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Any]:
        if self.docs_for is not None:
            return list(self.docs_for(query))
        return [
            Document(page_content=f"Passage one about {query}.", id=f"doc-1:{query}",
                     metadata={"source": "kb/one.md", "score": 0.91}),
            Document(page_content=f"Passage two about {query}.",
                     metadata={"source": "kb/two.md", "id": "doc-2"}),
        ]


class FailingRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        raise RuntimeError("index unavailable")


class EchoChatModel(BaseChatModel):
    """Answers ``Answer: <last line of the prompt>``; reports usage like OpenAI models do.

    ``usage_in_llm_output`` reports it the older way, in ``llm_output["token_usage"]``.
    """

    usage_in_llm_output: bool = False

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "fake"
        params["ls_model_name"] = "echo-1"
        return params

    def _answer(self, messages: list[BaseMessage]) -> str:
        last = str(messages[-1].content).splitlines()[-1]
        return f"Answer: {last.removeprefix('Question: ')}. It is well known."

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        text = self._answer(messages)
        if self.usage_in_llm_output:
            return ChatResult(
                generations=[ChatGeneration(message=AIMessage(content=text))],
                llm_output={"token_usage": {"prompt_tokens": 11, "completion_tokens": 7,
                                            "total_tokens": 18}, "model_name": "echo-1-0613"})
        message = AIMessage(content=text, usage_metadata={
            "input_tokens": 12, "output_tokens": 5, "total_tokens": 17})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for word in self._answer(messages).split(" "):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + " "))
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def format_docs(docs: Sequence[Any]) -> str:
    return "\n".join(str(getattr(d, "page_content", d)) for d in docs)


def rag_chain(retriever: BaseRetriever | None = None,
              model: BaseChatModel | None = None) -> Runnable[Any, str]:
    retriever = retriever if retriever is not None else EchoRetriever()
    model = model if model is not None else EchoChatModel()
    return ({"context": retriever | format_docs, "question": RunnablePassthrough()}
            | PROMPT | model | StrOutputParser())


@pytest.fixture(name="tracing")
def tracing_fixture() -> Iterator[InMemoryTracing]:
    """A private in-memory provider; fails the test if the handler swallowed an error."""
    reset_internal_error_counts()
    tracing = InMemoryTracing()
    yield tracing
    tracing.shutdown()
    # LangChain swallows what a callback raises: make our own failures fail the test.
    assert internal_error_counts() == {}


