"""LangChain steps that choose passages before the prompt: a compression retriever over
a filtering compressor, an ``EmbeddingsFilter``, a ``RunnableLambda`` that cuts the
list, ``LongContextReorder``, a LangGraph node that grades and drops passages. The
RETRIEVER span keeps what was retrieved; the record scores what reached the prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import agent_fakes as apps
import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_classic.retrievers.document_compressors import EmbeddingsFilter
from langchain_community.document_transformers import LongContextReorder
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from langgraph.graph import START, StateGraph
from opentelemetry.sdk.trace import ReadableSpan
from span_checks import by_kind, one
from test_langchain_agents import one_request, passages
from test_langchain_shapes import PROMPT, STORE, model, top

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing

Q = apps.QUESTION
ANSWER = f"Answer: {apps.PASSAGE}"
K = 4


def join(docs: list[Document]) -> str:
    return "\n".join(d.page_content for d in docs)


def llm() -> Any:
    return model(AIMessage(ANSWER))


class KeepEveryOther(BaseDocumentCompressor):
    """A filter: keeps the first, third... Documents as they are."""

    def compress_documents(self, documents: Any, query: str,
                           callbacks: Callbacks | None = None) -> list[Document]:
        return list(documents[::2])


def retrieved(spans: list[ReadableSpan]) -> list[str]:
    span = one(spans, sc.KIND_RETRIEVER)
    return [span.attributes[sc.document_key(i, sc.DOCUMENT_CONTENT)]
            for i in range(span.attributes["ragas.retrieval.documents_total"])]


def run(tracing: InMemoryTracing, chain: Any) -> tuple[list[ReadableSpan], list[str]]:
    chain.invoke(Q, {"callbacks": [RagasCallbackHandler(tracing.provider)]})
    spans = tracing.spans()
    _, record = one_request(spans)
    assert record.answer == ANSWER
    return spans, passages(record)


def test_a_compression_retriever_over_a_filter_scores_its_own_output(
        tracing: InMemoryTracing) -> None:
    retriever = ContextualCompressionRetriever(
        base_compressor=KeepEveryOther(),
        base_retriever=STORE.as_retriever(search_kwargs={"k": K}))
    chain = ({"context": retriever | join, "question": RunnablePassthrough()} | PROMPT
             | llm() | StrOutputParser())

    spans, scored = run(tracing, chain)

    assert one(spans, sc.KIND_RETRIEVER).name == "ContextualCompressionRetriever"
    assert scored == top(Q, K)[::2]


def test_an_embeddings_filter_in_a_compression_retriever(tracing: InMemoryTracing) -> None:
    embeddings_filter = EmbeddingsFilter(embeddings=DeterministicFakeEmbedding(size=16), k=2,
                                         similarity_threshold=None)
    retriever = ContextualCompressionRetriever(
        base_compressor=embeddings_filter,
        base_retriever=STORE.as_retriever(search_kwargs={"k": K}))
    kept = [d.page_content for d in embeddings_filter.compress_documents(
        STORE.similarity_search(Q, k=K), Q)]
    chain = ({"context": retriever | join, "question": RunnablePassthrough()} | PROMPT
             | llm() | StrOutputParser())

    _, scored = run(tracing, chain)

    assert sorted(scored) == sorted(kept) and len(kept) == 2


def _cut(docs: list[Document]) -> list[Document]:
    return docs[:2]


CUTS: dict[str, Callable[[], Any]] = {
    "lambda_cuts_the_list": lambda: RunnableLambda(_cut),
    "embeddings_filter_in_a_step": lambda: RunnableLambda(
        lambda docs: EmbeddingsFilter(embeddings=DeterministicFakeEmbedding(size=16), k=2,
                                      similarity_threshold=None).compress_documents(docs, Q)),
}


@pytest.mark.parametrize("make_cut", CUTS.values(), ids=CUTS.keys())
def test_a_step_that_cuts_the_documents_marks_what_it_kept(
        tracing: InMemoryTracing, make_cut: Callable[[], Any]) -> None:
    cut = make_cut()
    kept = [d.page_content for d in cut.invoke(STORE.similarity_search(Q, k=K))]
    chain = ({"context": STORE.as_retriever(search_kwargs={"k": K}) | cut | join,
              "question": RunnablePassthrough()} | PROMPT | llm() | StrOutputParser())

    spans, scored = run(tracing, chain)

    assert retrieved(spans) == top(Q, K)
    assert len(kept) == 2 and scored == kept
    reranker = one(spans, sc.KIND_RERANKER)
    assert reranker.name == cut.get_name()


def test_a_cut_inside_assign_is_one_reranker_span(tracing: InMemoryTracing) -> None:
    chain = ({"context": STORE.as_retriever(search_kwargs={"k": K}),
              "question": RunnablePassthrough()}
             | RunnablePassthrough.assign(context=lambda x: x["context"][:2])
             | RunnablePassthrough.assign(context=lambda x: join(x["context"]))
             | PROMPT | llm() | StrOutputParser())

    spans, scored = run(tracing, chain)

    assert scored == top(Q, K)[:2]
    assert len(by_kind(spans, sc.KIND_RERANKER)) == 1


def test_a_reorder_keeps_every_passage_and_adds_no_span(tracing: InMemoryTracing) -> None:
    reorder = RunnableLambda(LongContextReorder().transform_documents)
    chain = ({"context": STORE.as_retriever(search_kwargs={"k": K}) | reorder | join,
              "question": RunnablePassthrough()} | PROMPT | llm() | StrOutputParser())

    spans, scored = run(tracing, chain)

    # The same passages in another order score the same: nothing to replace.
    assert scored == top(Q, K)
    assert by_kind(spans, sc.KIND_RERANKER) == []


class GradedState(TypedDict, total=False):
    question: str
    documents: list[Document]
    answer: str


def graded_graph(keep: Callable[[Document], bool]) -> Any:
    answerer = llm()

    def retrieve(state: GradedState) -> dict[str, Any]:
        return {"documents": STORE.similarity_search(state["question"], k=K)}

    def grade(state: GradedState) -> dict[str, Any]:
        return {"documents": [d for d in state["documents"] if keep(d)]}

    def generate(state: GradedState) -> dict[str, Any]:
        return {"answer": answerer.invoke(join(state["documents"])).text}

    graph = StateGraph(GradedState).add_sequence([retrieve, grade, generate])
    graph.add_edge(START, "retrieve")
    return graph.compile()


def test_a_graph_node_that_drops_passages_marks_what_it_kept(
        tracing: InMemoryTracing) -> None:
    first = top(Q, K)[0]
    app = graded_graph(lambda d: d.page_content != first)
    app.invoke({"question": Q}, {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    spans = tracing.spans()
    _, record = one_request(spans)
    assert retrieved(spans) == top(Q, K)
    assert passages(record) == top(Q, K)[1:]
    assert one(spans, sc.KIND_RERANKER).name == "grade"


def test_a_graph_node_that_drops_every_passage_leaves_none(tracing: InMemoryTracing) -> None:
    app = graded_graph(lambda d: False)
    app.invoke({"question": Q}, {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    _, record = one_request(tracing.spans())
    assert passages(record) == []


def test_a_step_handing_on_one_of_two_passage_lists_is_no_cut(
        tracing: InMemoryTracing) -> None:
    """A step that hands on "a" whole (a subset of all it got, but not of its own key)
    made no choice among passages: no RERANKER span for it. The other list never
    reaches the prompt: its retrieval is marked and gives no passage."""
    retriever = STORE.as_retriever(search_kwargs={"k": 1})
    other = apps.question(5)
    chain = ({"a": retriever, "b": RunnableLambda(lambda q: other) | retriever,
              "question": RunnablePassthrough()}
             | RunnableLambda(lambda x: {"a": x["a"], "question": x["question"]})
             | RunnablePassthrough.assign(context=lambda x: join(x["a"]))
             | PROMPT | llm() | StrOutputParser())
    chain.invoke(Q, {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    spans = tracing.spans()
    _, record = one_request(spans)
    assert by_kind(spans, sc.KIND_RERANKER) == []
    assert passages(record) == top(Q, 1)
    marks = {(s.attributes or {}).get(sc.RAGAS_RETRIEVAL_DISCARDED)
             for s in by_kind(spans, sc.KIND_RETRIEVER)}
    assert marks == {None, sc.DISCARDED_NOT_IN_PROMPT}
