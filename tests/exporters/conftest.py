"""A provider whose only processor is a ``ScoringSpanProcessor`` in front of an
in-memory exporter."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from ragas_trace.exporters.processor import ScoringSpanProcessor
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.breaker import CircuitBreaker
from ragas_trace.testing.scripted_judge import ScriptedJudge


@dataclass
class Rig:
    provider: TracerProvider
    processor: ScoringSpanProcessor
    exporter: InMemorySpanExporter
    judge: ScriptedJudge

    @property
    def tracer(self) -> Tracer:
        return self.provider.get_tracer("test")

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def wait(self, predicate: Callable[[Sequence[ReadableSpan]], bool],
             timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.spans()):
                return True
            time.sleep(0.01)
        return predicate(self.spans())


@pytest.fixture
def make_rig() -> Iterator[Callable[..., Rig]]:
    rigs: list[Rig] = []

    def make(judge: ScriptedJudge | None = None, *, concurrency: int = 4,
             queue_size: int = 100, timeout_s: float = 5.0, breaker: CircuitBreaker | None = None,
             **kwargs: Any) -> Rig:
        judge = judge or ScriptedJudge()
        exporter = InMemorySpanExporter()
        scorer = BackgroundScorer(judge, concurrency=concurrency, queue_size=queue_size,
                                  timeout_s=timeout_s, breaker=breaker)
        processor = ScoringSpanProcessor(SimpleSpanProcessor(exporter), scorer, **kwargs)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        rig = Rig(provider, processor, exporter, judge)
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        rig.processor.shutdown(2.0)


PASSAGES = (
    "Paris is the capital and largest city of France.",
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
)


@pytest.fixture
def rag_chain() -> Any:
    """A small LCEL RAG chain: fixed retriever, fake chat model, string parser."""
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnablePassthrough

    class Passages(BaseRetriever):
        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun
                                    ) -> list[Document]:
            return [Document(page_content=p, id=f"doc-{i}") for i, p in enumerate(PASSAGES)]

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    model = FakeListChatModel(responses=["Paris is the capital of France."])
    return ({"context": Passages() | (lambda docs: "\n".join(d.page_content for d in docs)),
             "question": RunnablePassthrough()}
            | prompt | model | StrOutputParser())
