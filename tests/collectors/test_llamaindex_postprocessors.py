"""LlamaIndex node postprocessors and rerankers (``node_postprocessors=[...]``) in query
engines, chat engines and agents' query-engine tools: the RETRIEVER span keeps every
retrieved node, a RERANKER span per postprocessor holds what it passed on, and the
record scores what the synthesizer was given (``Response.source_nodes``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.chat_engine import CondensePlusContextChatEngine, ContextChatEngine
from llama_index.core.llms import CustomLLM, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import Memory
from llama_index.core.postprocessor import (
    LLMRerank,
    MetadataReplacementPostProcessor,
    SimilarityPostprocessor,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CustomQueryEngine, RetrieverQueryEngine
from llama_index.core.response_synthesizers import BaseSynthesizer, get_response_synthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool
from llamaindex_agent_fakes import TOOL_NAME, arun, tool_calling_llm
from llamaindex_fakes import (  # noqa: F401 (the fixtures are used by name)
    memories_fixture,
    tracing_fixture,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from span_checks import by_kind, one

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record, reranked_documents_of
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.scripted_judge import ScriptedJudge

Q = "Which cats like boxes?"
# (text, score): a cut-off at 0.3 keeps the first two, as in issue 25.
RETRIEVED = (("Cats like boxes.", 0.9), ("Boxes keep cats warm.", 0.6),
             ("Dogs like parks.", 0.2), ("Fish like water.", 0.1))


class FourRetriever(BaseRetriever):
    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(text=text, id_=f"n{i}",
                                            metadata={"window": f"Around: {text}"}),
                              score=score)
                for i, (text, score) in enumerate(RETRIEVED)]


class ReverseTopTwo(BaseNodePostprocessor):
    """A custom reranker: reverses the order and keeps two."""

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return list(reversed(nodes))[:2]


class RankingLLM(CustomLLM):
    """Answers LLMRerank's choice-select prompt: document 2 first, then document 1."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="ranker-1")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False,
                 **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="Doc: 2, Relevance: 9\nDoc: 1, Relevance: 7")

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def engine(postprocessors: Sequence[BaseNodePostprocessor]) -> RetrieverQueryEngine:
    return RetrieverQueryEngine.from_args(FourRetriever(), llm=MockLLM(max_tokens=4),
                                          node_postprocessors=list(postprocessors))


def _cutoff() -> list[BaseNodePostprocessor]:
    return [SimilarityPostprocessor(similarity_cutoff=0.3)]


def _cutoff_then_custom() -> list[BaseNodePostprocessor]:
    return [SimilarityPostprocessor(similarity_cutoff=0.15), ReverseTopTwo()]


def _llm_rerank() -> list[BaseNodePostprocessor]:
    return [LLMRerank(llm=RankingLLM(), top_n=2, choice_batch_size=4)]


def _window() -> list[BaseNodePostprocessor]:
    return [SimilarityPostprocessor(similarity_cutoff=0.3),
            MetadataReplacementPostProcessor(target_metadata_key="window")]


POSTPROCESSORS: dict[str, Callable[[], list[BaseNodePostprocessor]]] = {
    "similarity_cutoff": _cutoff, "cutoff_then_custom_reranker": _cutoff_then_custom,
    "llm_rerank": _llm_rerank, "sentence_window_replacement": _window}


def texts(nodes: Sequence[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def scored(spans: Sequence[ReadableSpan]) -> list[str]:
    record = extract_record(spans)
    assert record is not None
    return record.context_texts


def retrieved_texts(spans: Sequence[ReadableSpan]) -> list[str]:
    retriever = one(spans, sc.KIND_RETRIEVER)
    return [retriever.attributes[sc.document_key(i, sc.DOCUMENT_CONTENT)]
            for i in range(retriever.attributes["ragas.retrieval.documents_total"])]


@pytest.mark.parametrize("make", POSTPROCESSORS.values(), ids=POSTPROCESSORS.keys())
@pytest.mark.parametrize("asynchronous", [False, True], ids=["query", "aquery"])
def test_query_engine_scores_the_nodes_the_synthesizer_was_given(
        tracing: InMemoryTracing, make: Callable[[], list[BaseNodePostprocessor]],
        asynchronous: bool) -> None:
    llamaindex.instrument(tracing.provider)
    query_engine = engine(make())

    response = asyncio.run(query_engine.aquery(Q)) if asynchronous else query_engine.query(Q)

    spans = tracing.spans()
    assert retrieved_texts(spans) == [text for text, _ in RETRIEVED]
    assert len(response.source_nodes) < len(RETRIEVED)
    assert scored(spans) == texts(response.source_nodes)
    rerankers = by_kind(spans, sc.KIND_RERANKER)
    expected = [type(p).__name__ for p in query_engine._node_postprocessors]
    if asynchronous and make is _llm_rerank:
        # LLMRerank's own async implementation has no dispatcher span: the nodes the
        # synthesizer was given stand for its output.
        expected = ["CompactAndRefine"]
    assert [s.name.rpartition(".")[0] for s in rerankers] == expected
    root = next(s for s in spans if s.parent is None)
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in rerankers)


def test_llm_rerank_model_call_is_under_its_reranker_span(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = engine(_llm_rerank()).query(Q)

    spans = tracing.spans()
    reranker = one(spans, sc.KIND_RERANKER)
    llms = by_kind(spans, sc.KIND_LLM)
    # The ranking call under the reranker, the answer's under the root.
    assert len(llms) == 2
    assert sum(s.parent is not None and s.parent.span_id == reranker.context.span_id
               for s in llms) == 1
    assert [c.content for c in reranked_documents_of(reranker)] == texts(response.source_nodes)
    assert [c.score for c in reranked_documents_of(reranker)] == [9.0, 7.0]


class OwnFilterEngine(CustomQueryEngine):
    """Filters the retrieved nodes itself before synthesizing (no postprocessor)."""

    retriever: BaseRetriever
    synthesizer: BaseSynthesizer

    def custom_query(self, query_str: str) -> Any:
        nodes = [n for n in self.retriever.retrieve(query_str) if "cats" in n.node.get_content()]
        return self.synthesizer.synthesize(query_str, nodes)


def test_an_engine_that_filters_nodes_itself_scores_what_it_synthesized(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    query_engine = OwnFilterEngine(
        retriever=FourRetriever(),
        synthesizer=get_response_synthesizer(llm=MockLLM(max_tokens=4)))

    response = query_engine.query(Q)

    spans = tracing.spans()
    assert len(retrieved_texts(spans)) == len(RETRIEVED)
    assert scored(spans) == texts(response.source_nodes) == ["Boxes keep cats warm."]


def test_no_reranker_span_when_the_synthesizer_gets_what_was_retrieved(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine([]).query(Q)

    spans = tracing.spans()
    assert by_kind(spans, sc.KIND_RERANKER) == []
    assert scored(spans) == [text for text, _ in RETRIEVED]


def test_a_cutoff_that_keeps_nothing_leaves_nothing_to_score(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = engine([SimilarityPostprocessor(similarity_cutoff=0.99)]).query(Q)

    assert response.source_nodes == []
    spans = tracing.spans()
    assert len(retrieved_texts(spans)) == len(RETRIEVED)
    assert scored(spans) == []


@pytest.mark.parametrize("make_engine", [ContextChatEngine.from_defaults,
                                         CondensePlusContextChatEngine.from_defaults],
                         ids=["context", "condense_plus_context"])
def test_chat_engines_score_the_postprocessed_nodes(
        tracing: InMemoryTracing, memories: Callable[..., Memory],
        make_engine: Callable[..., Any]) -> None:
    chat_engine = make_engine(retriever=FourRetriever(), llm=MockLLM(max_tokens=4),
                              memory=memories(), node_postprocessors=_cutoff())
    llamaindex.instrument(tracing.provider)

    response = chat_engine.chat(Q)

    spans = tracing.spans()
    assert retrieved_texts(spans) == [text for text, _ in RETRIEVED]
    assert scored(spans) == texts(response.source_nodes) == ["Cats like boxes.",
                                                             "Boxes keep cats warm."]


def test_an_agent_tool_engine_scores_the_postprocessed_nodes_of_each_call(
        tracing: InMemoryTracing) -> None:
    tool = QueryEngineTool.from_defaults(engine(_cutoff()), name=TOOL_NAME,
                                         description="Answers questions about pets.")
    agent = FunctionAgent(tools=[tool], llm=tool_calling_llm(lookups=2), streaming=False)
    llamaindex.instrument(tracing.provider)

    arun(lambda: agent.run(user_msg=Q))

    spans = tracing.spans()
    assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 2
    tools = {s.context.span_id for s in by_kind(spans, sc.KIND_TOOL)}
    rerankers = by_kind(spans, sc.KIND_RERANKER)
    assert len(rerankers) == 2 and {s.parent.span_id for s in rerankers if s.parent} == tools
    assert scored(spans) == ["Cats like boxes.", "Boxes keep cats warm."] * 2


def test_the_judge_gets_the_postprocessed_nodes() -> None:
    exporter = InMemorySpanExporter()
    judge = ScriptedJudge()
    rt = ragas_trace.setup(judge=judge, tracer_provider=TracerProvider(), exporter=exporter)
    installation = llamaindex.instrument(tracer_provider=rt.tracer_provider)
    try:
        response = engine(_cutoff()).query(Q)
        assert rt.force_flush(timeout_s=10)
    finally:
        installation.uninstrument()
        rt.shutdown(timeout_s=5)

    assert judge.contexts == [texts(response.source_nodes)] == [
        ["Cats like boxes.", "Boxes keep cats warm."]]
    [root] = [s for s in exporter.get_finished_spans() if s.name == "RetrieverQueryEngine.query"]
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"


def test_a_streamed_query_scores_the_postprocessed_nodes(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    query_engine = RetrieverQueryEngine.from_args(
        FourRetriever(), llm=MockLLM(max_tokens=4), streaming=True,
        node_postprocessors=_cutoff())

    response = query_engine.query(Q)
    answer = "".join(response.response_gen)

    spans = tracing.spans()
    record = extract_record(spans)
    assert record is not None and record.answer == answer
    assert record.context_texts == texts(response.source_nodes) == [
        "Cats like boxes.", "Boxes keep cats warm."]
