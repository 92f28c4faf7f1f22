"""A small in-memory LlamaIndex app for the collector's tests: real llama-index-core
engines over a ``VectorStoreIndex`` with ``MockEmbedding``, and LLMs that answer
without a network (``MockLLM``, plus a scripted one that streams and reports usage)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.bridge.pydantic import Field
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.llms import CustomLLM, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from span_checks import kinds, one
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from ragas_trace._internal_errors import internal_error_counts, reset_internal_error_counts
from ragas_trace.collectors import llamaindex
from ragas_trace.testing import InMemoryTracing

QUESTION = "Which cats like boxes?"
TOKENS = ("Most ", "cats ", "like ", "boxes.")
ANSWER = "".join(TOKENS)
PASSAGES = (
    "Cats like boxes because boxes are warm.",
    "Dogs prefer open spaces.",
    "Some cats sleep in sinks.",
)


def embed_model() -> MockEmbedding:
    return MockEmbedding(embed_dim=8)


def nodes() -> list[TextNode]:
    return [TextNode(text=text, id_=f"doc-{i}", metadata={"source": f"kb/{i}.md"})
            for i, text in enumerate(PASSAGES)]


def index(node_list: Sequence[TextNode] | None = None) -> VectorStoreIndex:
    return VectorStoreIndex(nodes=list(nodes() if node_list is None else node_list),
                            embed_model=embed_model())


class ScriptedLLM(CustomLLM):
    """Answers ``TOKENS`` (streamed one at a time) and reports token usage the way the
    OpenAI integration does (``additional_kwargs``). ``fail_after`` makes the stream
    raise after that many tokens."""

    model: str = "scripted-1"
    fail_after: int | None = None

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=self.model)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=ANSWER, additional_kwargs=_USAGE)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        def gen() -> Iterator[CompletionResponse]:
            text = ""
            for i, token in enumerate(TOKENS):
                if self.fail_after is not None and i >= self.fail_after:
                    raise RuntimeError("model connection lost")
                text += token
                last = i == len(TOKENS) - 1
                yield CompletionResponse(text=text, delta=token,
                                         additional_kwargs=_USAGE if last else {})
        return gen()


_USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}


class EchoRetriever(BaseRetriever):
    """Returns passages naming the query, so a test can tell whose retrieval it was."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        q = query_bundle.query_str
        return [NodeWithScore(node=TextNode(text=f"passage about {q}", id_=f"{q}-{i}"),
                              score=1.0 - i / 10) for i in range(2)]


class FailingRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        raise ConnectionError("vector store unreachable")


def echo_engine(streaming: bool = False) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(EchoRetriever(), llm=MockLLM(max_tokens=4),
                                          streaming=streaming)


class EventCounter(BaseEventHandler):
    """Counts events by class name (to show what LlamaIndex itself emitted)."""

    counts: dict[str, int] = Field(default_factory=dict)

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        name = event.class_name()
        self.counts[name] = self.counts.get(name, 0) + 1


@pytest.fixture(name="tracing")
def tracing_fixture() -> Iterator[InMemoryTracing]:
    """A private provider; fails the test if the collector swallowed an error of its own."""
    reset_internal_error_counts()
    tracing = InMemoryTracing()
    try:
        yield tracing
    finally:
        llamaindex.uninstrument()
        tracing.shutdown()
    assert internal_error_counts() == {}


@pytest.fixture(name="memories")
def memories_fixture() -> Iterator[Callable[..., Memory]]:
    """Makes the chat memory LlamaIndex gives a chat engine by default (``Memory`` over
    an in-memory SQLite database through aiosqlite), on an engine disposed when the
    test ends. LlamaIndex never closes its own: the aiosqlite connection's worker
    thread outlives the test, and when the garbage collector finalizes the connection
    inside a later test's event loop that closes before the thread replies, the thread
    dies of "Event loop is closed" and fails that test
    (``PytestUnhandledThreadExceptionWarning``)."""
    engines: list[AsyncEngine] = []

    def make(**kwargs: Any) -> Memory:
        engine = create_async_engine("sqlite+aiosqlite:///:memory:")
        engines.append(engine)
        return Memory.from_defaults(async_engine=engine, **kwargs)

    yield make
    for engine in engines:
        asyncio.run(engine.dispose())


__all__ = [
    "ANSWER", "PASSAGES", "QUESTION", "TOKENS", "EchoRetriever", "EventCounter",
    "FailingRetriever", "MockLLM", "ScriptedLLM", "echo_engine", "embed_model", "index",
    "kinds", "memories_fixture", "nodes", "one", "tracing_fixture",
]
