"""Direct ``vector_store.similarity_search*`` calls (no retriever, no callback of their
own) made inside a traced run: one RETRIEVER span each, under the run that made them,
seen by our handler only; nothing at all outside a traced run."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypedDict
from uuid import UUID

import agent_fakes as apps
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from langgraph.graph import START, StateGraph
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from span_checks import by_kind, one
from test_langchain_agents import one_request, passages
from test_langchain_shapes import scored  # noqa: F401 (the fixture is used by name)

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import internal_error_counts, reset_internal_error_counts
from ragas_trace.collectors.langchain import (
    RagasCallbackHandler,
    _vector_stores,
    instrument,
    uninstrument,
)
from ragas_trace.testing import InMemoryTracing

Q = apps.QUESTION
STORE = apps.vector_store()


def top(question: str, k: int = 4) -> list[str]:
    return [d.page_content for d in STORE.similarity_search(question, k=k)]


def tutorial_agent(store: InMemoryVectorStore) -> Any:
    """The "Build a RAG agent" tutorial's RAG chain, as written there: the middleware
    searches the store and pastes the text into the system prompt."""

    @dynamic_prompt
    def prompt_with_context(request: ModelRequest) -> str:
        last_query = request.state["messages"][-1].text
        retrieved_docs = store.similarity_search(last_query)
        docs_content = "\n\n".join(doc.page_content for doc in retrieved_docs)
        return f"You are a helpful assistant. Use the following Context: {docs_content}"

    return create_agent(apps.ScriptedAgentModel(answer_directly=True), tools=[],
                        middleware=[prompt_with_context])


def async_tutorial_agent(store: InMemoryVectorStore) -> Any:

    @dynamic_prompt
    async def prompt_with_context(request: ModelRequest) -> str:
        docs = await store.asimilarity_search(request.state["messages"][-1].text, k=2)
        return "Context: " + "\n\n".join(doc.page_content for doc in docs)

    return create_agent(apps.ScriptedAgentModel(answer_directly=True), tools=[],
                        middleware=[prompt_with_context])


class Recorder(BaseCallbackHandler):
    """Another tracer in the same run: records which retriever runs it is shown."""

    def __init__(self) -> None:
        self.retrievers: list[str] = []

    def on_retriever_start(self, serialized: Any, query: str, *, run_id: UUID,
                           **kwargs: Any) -> None:
        self.retrievers.append(kwargs.get("name") or "retriever")


def test_dynamic_prompt_search_is_the_requests_retrieval(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    result = tutorial_agent(STORE).invoke(apps.messages_input(), {"callbacks": [handler]})

    spans = tracing.spans()
    root, record = one_request(spans)
    search = one(spans, sc.KIND_RETRIEVER)
    assert root.name == "LangGraph"
    assert search.name == "InMemoryVectorStore.similarity_search"
    assert search.attributes[sc.INPUT_VALUE] == Q
    assert search.attributes[sc.document_key(0, sc.DOCUMENT_ID)] == "doc-city3"
    assert search.attributes["ragas.retrieval.documents_total"] == 4
    assert record.question == Q
    assert passages(record) == top(Q)
    assert record.answer == f"Answer: {apps.PASSAGE}" == result["messages"][-1].text
    # The search precedes the model call it feeds, both inside the request.
    llm = one(spans, sc.KIND_LLM)
    assert root.start_time <= search.start_time <= search.end_time <= llm.start_time
    assert handler.open_runs == 0


def test_dynamic_prompt_search_is_scored_with_instrument(
        scored: Callable[[], list[ReadableSpan]]) -> None:  # noqa: F811 (the fixture)
    tutorial_agent(STORE).invoke(apps.messages_input())

    spans = scored()
    [root] = [s for s in spans if s.parent is None
              and (s.attributes or {}).get(sc.SPAN_KIND) == sc.KIND_CHAIN]
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert sc.RAGAS_EVALUATION_REASON not in root.attributes
    assert root.attributes[sc.INPUT_VALUE] == Q
    assert one(spans, sc.KIND_RETRIEVER).name == "InMemoryVectorStore.similarity_search"


class ScoredState(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: str


def test_a_node_calling_similarity_search_with_score_records_the_scores(
        tracing: InMemoryTracing) -> None:
    expected = STORE.similarity_search_with_score(Q, k=2)

    def retrieve(state: ScoredState) -> dict[str, Any]:
        found = STORE.similarity_search_with_score(state["question"], k=2)
        return {"context": [doc for doc, _ in found]}

    def generate(state: ScoredState) -> dict[str, Any]:
        return {"answer": "Answer: " + state["context"][0].page_content}

    graph = StateGraph(ScoredState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    handler = RagasCallbackHandler(tracing.provider)
    graph.compile().invoke({"question": Q}, {"callbacks": [handler]})

    spans = tracing.spans()
    root, record = one_request(spans)
    search = one(spans, sc.KIND_RETRIEVER)  # the state's copy is not a second one
    assert search.name == "InMemoryVectorStore.similarity_search_with_score"
    assert search.parent.span_id == root.context.span_id
    assert passages(record) == [doc.page_content for doc, _ in expected]
    assert [search.attributes[sc.document_key(i, sc.DOCUMENT_SCORE)] for i in range(2)] == [
        score for _, score in expected]
    assert record.answer == f"Answer: {apps.PASSAGE}"


class RelevanceStore(InMemoryVectorStore):
    """Scores are cosine similarities already: relevance is the score itself."""

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda score: score


def test_a_search_made_by_another_search_is_one_span(tracing: InMemoryTracing) -> None:
    """``similarity_search`` runs ``similarity_search_with_score``,
    ``similarity_search_with_relevance_scores`` runs it too (in the base class),
    ``max_marginal_relevance_search`` runs its ``_by_vector`` twin."""
    store = RelevanceStore(apps.KeywordEmbeddings())
    store.add_documents([Document(text) for text in top(Q, 4)])

    def searches(question: str) -> int:
        store.similarity_search(question, k=2)
        store.similarity_search_with_relevance_scores(question, k=2)
        return len(store.max_marginal_relevance_search(question, k=2, fetch_k=4))

    RunnableLambda(searches).invoke(Q, {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    names = [s.name for s in by_kind(tracing.spans(), sc.KIND_RETRIEVER)]
    assert names == ["RelevanceStore.similarity_search",
                     "RelevanceStore.similarity_search_with_relevance_scores",
                     "RelevanceStore.max_marginal_relevance_search"]


def test_a_vector_store_retriever_is_still_one_retriever_span(
        tracing: InMemoryTracing) -> None:
    retriever = STORE.as_retriever(search_kwargs={"k": 2})
    handler = RagasCallbackHandler(tracing.provider)
    RunnableLambda(lambda q: retriever.invoke(q)).invoke(Q, {"callbacks": [handler]})

    async def ask(question: str) -> list[Document]:
        return await retriever.ainvoke(question)

    asyncio.run(RunnableLambda(ask).ainvoke(Q, {"callbacks": [handler]}))

    traces = list(tracing.by_trace().values())
    assert len(traces) == 2
    for spans in traces:
        _, record = one_request(spans)
        assert [s.name for s in by_kind(spans, sc.KIND_RETRIEVER)] == ["VectorStoreRetriever"]
        assert passages(record) == top(Q, 2)
    # A search after the retriever run, in the same step, is recorded again.
    tracing.clear()

    def retriever_then_search(question: str) -> int:
        retriever.invoke(question)
        return len(STORE.similarity_search(apps.question(5), k=1))

    RunnableLambda(retriever_then_search).invoke(Q, {"callbacks": [handler]})
    names = [s.name for s in by_kind(tracing.spans(), sc.KIND_RETRIEVER)]
    assert names == ["VectorStoreRetriever", "InMemoryVectorStore.similarity_search"]


async def test_async_middleware_search_is_recorded(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    await async_tutorial_agent(STORE).ainvoke(apps.messages_input(), {"callbacks": [handler]})

    _, record = one_request(tracing.spans())
    search = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert search.name == "InMemoryVectorStore.asimilarity_search"
    assert passages(record) == top(Q, 2)
    assert record.answer == f"Answer: {apps.PASSAGE}"


async def test_twenty_concurrent_requests_keep_their_own_searches(
        tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    agent = async_tutorial_agent(STORE)
    sync_agent = tutorial_agent(STORE)

    async def ask(i: int) -> Any:
        inputs = apps.messages_input(apps.question(i))
        if i % 2:  # the sync search in an executor thread, beside the async ones
            return await asyncio.to_thread(sync_agent.invoke, inputs, {"callbacks": [handler]})
        return await agent.ainvoke(inputs, {"callbacks": [handler]})

    await asyncio.gather(*(ask(i) for i in range(20)))

    traces = list(tracing.by_trace().values())
    assert len(traces) == 20
    questions = set()
    for spans in traces:
        _, record = one_request(spans)
        assert record.question is not None
        questions.add(record.question)
        search = one(spans, sc.KIND_RETRIEVER)
        k = 2 if search.name == "InMemoryVectorStore.asimilarity_search" else 4
        assert passages(record) == top(record.question, k)
        assert record.answer == f"Answer: {passages(record)[0]}"
    assert questions == {apps.question(i) for i in range(20)}
    assert handler.open_runs == 0


def test_no_handler_no_spans_and_the_same_result(tracing: InMemoryTracing) -> None:
    RagasCallbackHandler(tracing.provider)  # capture enabled, but in no run
    assert _vector_stores.enabled()
    original = InMemoryVectorStore.__dict__["similarity_search"].__wrapped__
    expected = original(STORE, Q, k=3)

    assert STORE.similarity_search(Q, k=3) == expected  # outside any run
    recorder = Recorder()
    inside = RunnableLambda(lambda q: STORE.similarity_search(q, k=3)).invoke(
        Q, {"callbacks": [recorder]})  # in a run traced by another tracer only
    assert inside == expected
    assert len(tracing.spans()) == 0
    assert recorder.retrievers == []


def test_other_tracers_are_not_shown_the_search(tracing: InMemoryTracing) -> None:
    recorder = Recorder()
    handler = RagasCallbackHandler(tracing.provider)
    tutorial_agent(STORE).invoke(apps.messages_input(), {"callbacks": [handler, recorder]})

    assert one(tracing.spans(), sc.KIND_RETRIEVER).name == "InMemoryVectorStore.similarity_search"
    assert recorder.retrievers == []


def test_capture_can_be_turned_off(tracing: InMemoryTracing,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _vector_stores.disable()
    monkeypatch.setenv("RAGAS_TRACE_CAPTURE_VECTOR_STORES", "0")
    handler = RagasCallbackHandler(tracing.provider)
    assert not handler.captures_vector_stores
    assert not _vector_stores.enabled()
    assert not hasattr(InMemoryVectorStore.__dict__["similarity_search"], "__wrapped__")

    tutorial_agent(STORE).invoke(apps.messages_input(), {"callbacks": [handler]})
    _, record = one_request(tracing.spans())
    assert len(by_kind(tracing.spans(), sc.KIND_RETRIEVER)) == 0
    assert len(record.contexts) == 0


def test_a_failing_search_keeps_its_exception(tracing: InMemoryTracing) -> None:
    class Broken(InMemoryVectorStore):
        def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
            raise LookupError("index offline")

    RagasCallbackHandler(tracing.provider)
    broken = Broken(apps.KeywordEmbeddings())
    handler = RagasCallbackHandler(tracing.provider)
    with pytest.raises(LookupError, match="index offline"):
        RunnableLambda(lambda q: broken.similarity_search(q)).invoke(
            Q, {"callbacks": [handler]})

    search = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert search.name == "Broken.similarity_search"  # a class defined after enabling
    assert search.status.status_code == StatusCode.ERROR
    assert handler.open_runs == 0


def _failing(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("collector bug")


@pytest.mark.parametrize("broken", ["documents_and_scores", "uuid4"])
def test_a_failure_of_ours_changes_nothing_for_the_app(
        tracing: InMemoryTracing, monkeypatch: pytest.MonkeyPatch, broken: str) -> None:
    expected = top(Q, 2)
    monkeypatch.setenv("RAGAS_TRACE_RAISE_INTERNAL_ERRORS", "0")  # as in production
    monkeypatch.setattr(_vector_stores, broken, _failing)
    handler = RagasCallbackHandler(tracing.provider)
    got = RunnableLambda(lambda q: STORE.similarity_search(q, k=2)).invoke(
        Q, {"callbacks": [handler]})

    assert [d.page_content for d in got] == expected
    assert internal_error_counts() == {"langchain.vector_store_search": 1}
    assert handler.open_runs == 0
    one_request(tracing.spans())
    reset_internal_error_counts()  # counted as it should be: not a failure of the test


def test_uninstrument_restores_the_store_methods() -> None:
    _vector_stores.disable()
    originals = {(cls, name): cls.__dict__[name]
                 for cls in (VectorStore, InMemoryVectorStore)
                 for name in _vector_stores.METHODS if name in cls.__dict__}
    init_subclass = VectorStore.__dict__.get("__init_subclass__")

    instrument()
    wrapped = {key for key in originals if key[0].__dict__[key[1]] is not originals[key]}
    assert (InMemoryVectorStore, "similarity_search") in wrapped
    assert (InMemoryVectorStore, "asimilarity_search") in wrapped
    assert (VectorStore, "asimilarity_search") in wrapped
    assert (VectorStore, "similarity_search") not in wrapped  # abstract: nothing to wrap
    instrument()  # again: not wrapped twice
    assert InMemoryVectorStore.__dict__["similarity_search"].__wrapped__ is originals[
        (InMemoryVectorStore, "similarity_search")]

    class Later(InMemoryVectorStore):
        def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
            return super().similarity_search(query, k, **kwargs)

    later = Later.__dict__["similarity_search"]
    assert hasattr(later, "__wrapped__")

    uninstrument()
    for (cls, name), method in originals.items():
        assert cls.__dict__[name] is method
    assert Later.__dict__["similarity_search"] is later.__wrapped__
    assert VectorStore.__dict__.get("__init_subclass__") is init_subclass
