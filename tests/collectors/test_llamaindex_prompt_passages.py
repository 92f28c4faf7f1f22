"""LlamaIndex: the passages on the root are those that reached the answering model's
input when a ``CustomQueryEngine`` retrieves once and cuts the nodes before its prompt:
a custom postprocessor (a ``BaseNodePostprocessor`` reranker), a token budget in plain
code, a truncation of each passage; through ``query``, a streamed query, ``aquery``,
a streamed ``aquery`` and a batch of ``aquery`` calls at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llamaindex_fakes import (
    ANSWER,
    ScriptedLLM,
    tracing_fixture,  # noqa: F401 (the fixture is used by name)
)
from opentelemetry.sdk.trace import ReadableSpan
from span_checks import by_kind

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing

QUESTIONS = ("Which river is wide?", "Which market opens early?", "Where is the bridge?")
K = 4


def passage(query: str, i: int) -> str:
    facts = " ".join(f"Fact {j} about river{i}: the market opens at {j + 6} o'clock."
                     for j in range(4))
    return f"Passage {i} for {query}: river{i} is wide. {facts}"


class LongRetriever(BaseRetriever):
    """Four long passages naming the query, scores falling."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        q = query_bundle.query_str
        return [NodeWithScore(node=TextNode(text=passage(q, i), id_=f"{q}-{i}",
                                            metadata={"source": f"kb/{i}.md"}),
                              score=1.0 - i / 10) for i in range(K)]


class LowestTwo(BaseNodePostprocessor):
    """A custom reranker: the two lowest-scored nodes, lowest first."""

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return sorted(nodes, key=lambda n: n.score or 0.0)[:2]


def rerank(nodes: Sequence[NodeWithScore]) -> list[tuple[NodeWithScore, str]]:
    return [(n, n.node.get_content()) for n in LowestTwo().postprocess_nodes(list(nodes))]


def token_budget(nodes: Sequence[NodeWithScore], budget: int = 60
                 ) -> list[tuple[NodeWithScore, str]]:
    out = []
    for node in nodes:
        words = node.node.get_content().split(" ")
        if len(words) > budget:
            out.append((node, " ".join(words[:budget])))
            break
        out.append((node, node.node.get_content()))
        budget -= len(words)
    return out


def truncated(nodes: Sequence[NodeWithScore], chars: int = 100
              ) -> list[tuple[NodeWithScore, str]]:
    return [(n, n.node.get_content()[:chars]) for n in nodes[:3]]


CUTS: dict[str, Callable[[Sequence[NodeWithScore]], list[tuple[NodeWithScore, str]]]] = {
    "custom_postprocessor": rerank, "token_budget": token_budget, "truncate": truncated}


def whole_words(part: str, text: str) -> str:
    if part == text or text[len(part)] == " ":
        return part
    return part.rsplit(" ", 1)[0]


class CutEngine(CustomQueryEngine):
    """Retrieves, cuts in its own code, prompts the model (streamed or not)."""

    retriever: Any
    llm: Any
    cut: Any
    stream: bool = False

    def _prompt(self, nodes: Sequence[NodeWithScore], query_str: str) -> str:
        context = "\n\n".join(part for _, part in self.cut(nodes))
        return f"Context:\n{context}\nQuestion: {query_str}"

    def custom_query(self, query_str: str) -> Any:
        prompt = self._prompt(self.retriever.retrieve(query_str), query_str)
        if self.stream:
            deltas: Iterator[str] = (r.delta or "" for r in self.llm.stream_complete(prompt))
            return StreamingResponse(response_gen=deltas)
        return str(self.llm.complete(prompt))

    async def acustom_query(self, query_str: str) -> Any:
        prompt = self._prompt(await self.retriever.aretrieve(query_str), query_str)
        if self.stream:
            async def deltas() -> AsyncIterator[str]:
                async for r in await self.llm.astream_complete(prompt):
                    yield r.delta or ""
            return AsyncStreamingResponse(response_gen=deltas())
        return str(await self.llm.acomplete(prompt))


def run(form: str, cut: str) -> None:
    engine = CutEngine(retriever=LongRetriever(), llm=ScriptedLLM(), cut=CUTS[cut],
                       stream=form in ("stream", "astream"))

    async def each_async() -> None:
        for q in QUESTIONS:
            response = await engine.aquery(q)
            if form == "astream":
                assert isinstance(response, AsyncStreamingResponse)
                async for _ in response.async_response_gen():
                    pass

    async def at_once() -> None:
        await asyncio.gather(*(engine.aquery(q) for q in QUESTIONS))

    if form == "query":
        for q in QUESTIONS:
            engine.query(q)
    elif form == "stream":
        for q in QUESTIONS:
            response = engine.query(q)
            assert isinstance(response, StreamingResponse)
            for _ in response.response_gen:
                pass
    elif form == "batch":
        asyncio.run(at_once())
    else:
        asyncio.run(each_async())


FORMS = ["query", "stream", "aquery", "astream", "batch"]


def requests(tracing: InMemoryTracing) -> dict[str, list[ReadableSpan]]:
    found = {}
    for spans in tracing.by_trace().values():
        record = extract_record(spans)
        assert record is not None and record.question is not None
        found[record.question] = spans
    assert sorted(found) == sorted(QUESTIONS)
    return found


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("cut", CUTS)
def test_a_custom_query_engine_that_cuts_its_retrieval(
        tracing: InMemoryTracing, form: str, cut: str) -> None:
    llamaindex.instrument(tracing.provider)
    run(form, cut)

    for question, spans in requests(tracing).items():
        retrieved = LongRetriever().retrieve(question)
        shown = CUTS[cut](retrieved)
        record = extract_record(spans)
        assert record is not None
        assert record.answer == ANSWER
        assert record.context_texts == [whole_words(part, n.node.get_content())
                                        for n, part in shown]
        assert [c.id for c in record.contexts] == [n.node.node_id for n, _ in shown]
        assert len(shown) < K
        [retrieval] = by_kind(spans, sc.KIND_RETRIEVER)
        assert (retrieval.attributes or {})["ragas.retrieval.documents_total"] == K
        assert sc.RAGAS_RETRIEVAL_DISCARDED not in (retrieval.attributes or {})
        root = next(s for s in spans if s.parent is None)
        assert sc.RAGAS_PASSAGES_SOURCE not in (root.attributes or {})


def test_every_passage_in_the_prompt_adds_no_span(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = CutEngine(retriever=LongRetriever(), llm=ScriptedLLM(),
                       cut=lambda nodes: [(n, n.node.get_content()) for n in nodes])
    engine.query(QUESTIONS[0])

    spans = tracing.spans()
    record = extract_record(spans)
    assert record is not None and len(record.contexts) == K
    assert by_kind(spans, sc.KIND_RERANKER) == []


def test_an_answer_from_no_model_call_keeps_every_passage(tracing: InMemoryTracing) -> None:
    """The engine answers without an LLM the collector sees: every passage counts, and
    the root says the answering input was not seen."""
    class NoModel(CustomQueryEngine):
        retriever: Any

        def custom_query(self, query_str: str) -> str:
            nodes = self.retriever.retrieve(query_str)
            return f"From {nodes[0].node.node_id}"

    llamaindex.instrument(tracing.provider)
    NoModel(retriever=LongRetriever()).query(QUESTIONS[0])

    spans = tracing.spans()
    record = extract_record(spans)
    assert record is not None and len(record.contexts) == K
    root = next(s for s in spans if s.parent is None)
    assert (root.attributes or {})[sc.RAGAS_PASSAGES_SOURCE] == sc.PASSAGES_PROMPT_UNSEEN
