"""The passages on the root are the ones the final answer was generated from, in three
app shapes where more was retrieved than the answering model was given, each through
``invoke``, ``stream``, ``ainvoke``, ``astream``, ``batch`` and ``abatch``:

- two retrievers in a ``RunnableParallel``, a step keeping the top hit of each, then
  the prompt (the step's cut, whose input a stream delivers only at its end);
- a whole chain with a fallback chain (``rag.with_fallbacks([fallback])``), the first
  chain's model raising: one root per request, with the fallback's passages only;
- the LangGraph Agentic RAG tutorial's loop: tool call, grade "no", rewrite, tool call
  again, grade "yes", answer from the latest tool message: the later retrieval's
  passages only.

Fake models and stores, the frameworks' own parts. Where the app itself puts several
retrievals in the answering prompt, each of them counts (as before)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import agent_fakes as apps
import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnableParallel
from langchain_core.runnables import RunnablePassthrough as Passthrough
from langchain_core.tools import BaseTool, tool
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy, interrupt
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel
from span_checks import by_kind
from test_langchain_agents import one_request, passages

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.record import RagRecord
from ragas_trace.testing import InMemoryTracing

CITIES = apps.vector_store()
# A second knowledge base, so that two retrievers return different passages.
FOUNDED = InMemoryVectorStore(apps.KeywordEmbeddings())
FOUNDED.add_documents([Document(f"{c} was founded in {1000 + i}.", id=f"founded-{c}")
                       for i, c in enumerate(apps.CITIES)])
CITY_IDS = (3, 5, 7)  # one request each; a batch sends all three
PROMPT = ChatPromptTemplate.from_messages([("system", "Context:\n{context}"),
                                           ("human", "{question}")])


def top(store: InMemoryVectorStore, query: str, k: int) -> list[str]:
    return [d.page_content for d in store.similarity_search(query, k=k)]


def joined(docs: Sequence[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


def city_of(text: str) -> int:
    found = re.search(r"city(\d+)", text)
    assert found is not None, text
    return int(found.group(1))


class ScriptedModel(BaseChatModel):
    """A chat model whose reply is a function of the conversation it is given (so that
    concurrent requests get their own), for agents and structured output alike; a
    stream gets the text word by word, or the tool calls in one chunk."""

    reply: Callable[[list[BaseMessage]], AIMessage]
    fail: bool = False

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        if self.fail:
            raise RuntimeError("model unavailable")
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: CallbackManagerForLLMRun | None = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        if self.fail:
            raise RuntimeError("model unavailable")
        reply = self.reply(messages)
        if reply.tool_calls:
            calls = [tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"],
                                     index=i) for i, c in enumerate(reply.tool_calls)]
            yield ChatGenerationChunk(message=AIMessageChunk("", tool_call_chunks=calls))
            return
        for word in re.split(r"(?<= )", reply.text):
            yield ChatGenerationChunk(message=AIMessageChunk(word))


def answer_from_context(messages: list[BaseMessage]) -> AIMessage:
    """``Answer: <the first passage of the context in the prompt>``."""
    text = "\n".join(m.text for m in messages)
    context = text.split("Context:", 1)[1].strip()
    return AIMessage(f"Answer: {context.splitlines()[0]}")


ANSWERER = ScriptedModel(reply=answer_from_context)


# Shape 1: parallel retrievers merged before the prompt ----------------------------


def streamed_merge() -> Runnable[Any, str]:
    merge = RunnableLambda(lambda found: [found["cities"][0], found["founded"][0]])
    retrieve = RunnableParallel(cities=CITIES.as_retriever(search_kwargs={"k": 2}),
                                founded=FOUNDED.as_retriever(search_kwargs={"k": 2}))
    return ({"context": retrieve | merge | joined, "question": Passthrough()}
            | PROMPT | ANSWERER | StrOutputParser())


def merge_passages(city: int) -> list[str]:
    question = apps.question(city)
    return [top(CITIES, question, 1)[0], top(FOUNDED, question, 1)[0]]


# Shape 2: a whole chain with a fallback chain -------------------------------------


def rag(store: InMemoryVectorStore, k: int, model: BaseChatModel) -> Runnable[Any, str]:
    context = store.as_retriever(search_kwargs={"k": k}) | joined
    return {"context": context, "question": Passthrough()} | PROMPT | model | StrOutputParser()


def whole_chain_fallback(fallback_store: InMemoryVectorStore) -> Runnable[Any, str]:
    failing = rag(CITIES, 4, ScriptedModel(reply=answer_from_context, fail=True))
    return failing.with_fallbacks([rag(fallback_store, 2, ANSWERER)])


# Shape 3: the Agentic RAG tutorial's loop -----------------------------------------


class GradeDocuments(BaseModel):
    """The tutorial's grader schema."""

    binary_score: str


def search_first_then_the_question(messages: list[BaseMessage]) -> AIMessage:
    """The query-writing model: its first search is a poor one (regions near the city);
    after a rewrite it searches the rewritten question."""
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    city = city_of(humans[0].text)
    query = (humans[-1].text if len(humans) > 1
             else f"region{city + 1} region{city + 2} region{city + 3}")
    return AIMessage("", tool_calls=[{"name": "retrieve_context", "args": {"query": query},
                                      "id": f"call-{len(humans)}"}])


def grade(messages: list[BaseMessage]) -> AIMessage:
    """"yes" when the first passage is about the city asked about."""
    question, context = messages[-1].text.split("\nContext:\n", 1)
    score = "yes" if context.startswith(f"city{city_of(question)} ") else "no"
    return AIMessage("", tool_calls=[{"name": "GradeDocuments", "args": {"binary_score": score},
                                      "id": "grade"}])


def rewrite(messages: list[BaseMessage]) -> AIMessage:
    city = city_of(messages[-1].text)
    return AIMessage(f"city{city} city{city} region{city + 1}")


def artifact_tool(k: int) -> BaseTool:
    @tool(response_format="content_and_artifact")
    def retrieve_context(query: str) -> tuple[str, list[Document]]:
        """Search the knowledge base."""
        docs = CITIES.similarity_search(query, k=k)
        return joined(docs), docs

    return retrieve_context


def agentic_rag_loop(search: BaseTool, *, approve: bool = False) -> Any:
    """The tutorial's graph: ``generate_query_or_respond`` -> ``ToolNode`` ->
    ``grade_documents`` (structured output) -> ``rewrite_question`` or
    ``generate_answer`` (from the latest tool message). ``approve``: a human approves
    the passages (``interrupt()``) before the answer is written."""
    query_writer = ScriptedModel(reply=search_first_then_the_question)
    grader = ScriptedModel(reply=grade)
    rewriter = ScriptedModel(reply=rewrite)

    def generate_query_or_respond(state: MessagesState) -> dict[str, Any]:
        return {"messages": [query_writer.bind_tools([search]).invoke(state["messages"])]}

    def grade_documents(state: MessagesState) -> Literal["generate_answer",
                                                         "rewrite_question"]:
        prompt = f"{state['messages'][0].text}\nContext:\n{state['messages'][-1].text}"
        verdict = grader.with_structured_output(GradeDocuments).invoke(
            [{"role": "user", "content": prompt}])
        assert isinstance(verdict, GradeDocuments)
        return "generate_answer" if verdict.binary_score == "yes" else "rewrite_question"

    def rewrite_question(state: MessagesState) -> dict[str, Any]:
        better = rewriter.invoke([{"role": "user", "content": state["messages"][0].text}])
        return {"messages": [HumanMessage(better.text)]}

    def generate_answer(state: MessagesState) -> dict[str, Any]:
        if approve:
            interrupt({"passages": state["messages"][-1].text})
        prompt = (f"Question: {state['messages'][0].text}\n"
                  f"Context: {state['messages'][-1].text}")
        return {"messages": [ANSWERER.invoke([{"role": "user", "content": prompt}])]}

    graph = StateGraph(MessagesState)
    graph.add_node(generate_query_or_respond)
    graph.add_node("retrieve", ToolNode([search]))
    graph.add_node(rewrite_question)
    graph.add_node(generate_answer)
    graph.add_edge(START, "generate_query_or_respond")
    graph.add_conditional_edges("generate_query_or_respond", tools_condition,
                                {"tools": "retrieve", END: END})
    graph.add_conditional_edges("retrieve", grade_documents)
    graph.add_edge("rewrite_question", "generate_query_or_respond")
    graph.add_edge("generate_answer", END)
    return graph.compile(checkpointer=InMemorySaver() if approve else None)


def loop_searches(city: int, k: int) -> tuple[list[str], list[str]]:
    """The loop's first (graded "no") and second (answered from) retrievals."""
    return (top(CITIES, f"region{city + 1} region{city + 2} region{city + 3}", k),
            top(CITIES, f"city{city} city{city} region{city + 1}", k))


# The ways of calling an app ---------------------------------------------------------


def call(form: str, app: Any, inputs: list[Any], config: Any) -> None:
    """Every input through ``app``, one request each, in the given form."""
    async def each_async() -> None:
        for item in inputs:
            if form == "ainvoke":
                await app.ainvoke(item, config)
            else:
                async for _ in app.astream(item, config):
                    pass

    if form == "invoke":
        for item in inputs:
            app.invoke(item, config)
    elif form == "stream":
        for item in inputs:
            for _ in app.stream(item, config):
                pass
    elif form == "stream_messages":  # a graph's models streamed token by token
        for item in inputs:
            for _ in app.stream(item, config, stream_mode="messages"):
                pass
    elif form in ("ainvoke", "astream"):
        asyncio.run(each_async())
    elif form == "batch":
        app.batch(inputs, config)
    else:
        asyncio.run(app.abatch(inputs, config))


FORMS = ["invoke", "stream", "ainvoke", "astream", "batch", "abatch"]


def requests(tracing: InMemoryTracing, form: str, app: Any, inputs: list[Any]
             ) -> dict[str, tuple[list[ReadableSpan], RagRecord]]:
    """Each request's spans and record, by question; checks one trace per request, one
    root each, and nothing left open."""
    handler = RagasCallbackHandler(tracing.provider)
    call(form, app, inputs, {"callbacks": [handler]})
    found = {}
    for spans in tracing.by_trace().values():
        _, record = one_request(spans)
        assert record.question is not None
        found[record.question] = (spans, record)
    assert len(found) == len(inputs)
    assert handler.open_runs == 0
    return found


def discarded(spans: Sequence[ReadableSpan]) -> list[str | None]:
    return [(s.attributes or {}).get(sc.RAGAS_RETRIEVAL_DISCARDED)
            for s in sorted(by_kind(spans, sc.KIND_RETRIEVER), key=lambda s: s.start_time or 0)]


@pytest.mark.parametrize("form", FORMS)
def test_a_merge_of_parallel_retrievers_is_what_the_root_holds(
        tracing: InMemoryTracing, form: str) -> None:
    """The step keeping the top hit of each retriever is honoured when streamed too: its
    input arrives only with its end event there."""
    found = requests(tracing, form, streamed_merge(), [apps.question(i) for i in CITY_IDS])

    for city in CITY_IDS:
        spans, record = found[apps.question(city)]
        assert passages(record) == merge_passages(city)
        assert record.answer == f"Answer: {merge_passages(city)[0]}"
        assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 2  # both retrievals are shown


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("fallback_store", [CITIES, FOUNDED], ids=["same_store", "other_store"])
def test_a_whole_chain_fallback_is_one_request_with_the_fallbacks_passages(
        tracing: InMemoryTracing, form: str, fallback_store: InMemoryVectorStore) -> None:
    """The failed attempt's retrieval stays visible, marked, and adds no passage: not
    those the fallback retrieved again (same store), nor others (another store)."""
    app = whole_chain_fallback(fallback_store)
    found = requests(tracing, form, app, [apps.question(i) for i in CITY_IDS])

    for city in CITY_IDS:
        spans, record = found[apps.question(city)]
        expected = top(fallback_store, apps.question(city), 2)
        assert passages(record) == expected
        assert record.answer == f"Answer: {expected[0]}"
        assert discarded(spans) == [sc.DISCARDED_FAILED_ATTEMPT, None]
        [root] = [s for s in spans if s.parent is None]
        assert root.name == "RunnableWithFallbacks"
        failed = [s for s in by_kind(spans, sc.KIND_LLM) if not s.status.is_ok]
        assert len(failed) == 1 and "model unavailable" in (failed[0].status.description or "")


def test_a_model_with_fallbacks_called_on_its_own_is_one_request(
        tracing: InMemoryTracing) -> None:
    """The attempts of ``with_fallbacks`` called directly start with no parent run id:
    both model calls are under the fallbacks run."""
    model = ScriptedModel(reply=answer_from_context, fail=True).with_fallbacks([ANSWERER])
    model.invoke([HumanMessage(f"Context:\n{apps.PASSAGE}")],
                 {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    [root] = [s for s in tracing.spans() if s.parent is None]
    calls = by_kind(tracing.spans(), sc.KIND_LLM)
    assert len(calls) == 2 and len(tracing.spans()) == 3
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id
               for s in calls)
    assert [s.status.is_ok for s in sorted(calls, key=lambda s: s.start_time or 0)] == [
        False, True]


LOOP_TOOLS: dict[str, Callable[[], BaseTool]] = {
    # The tutorial's tool: a retriever tool over the vector store.
    "retriever_tool": lambda: apps.retriever_tool(CITIES),
    # A tool over ``similarity_search`` returning the Documents as its artifact.
    "artifact_tool": lambda: artifact_tool(2),
}


@pytest.mark.parametrize("form", [*FORMS, "stream_messages"])
@pytest.mark.parametrize("make_tool", LOOP_TOOLS.values(), ids=LOOP_TOOLS.keys())
def test_the_agentic_rag_loop_answers_from_the_later_retrieval(
        tracing: InMemoryTracing, form: str, make_tool: Callable[[], BaseTool]) -> None:
    found = requests(tracing, form, agentic_rag_loop(make_tool()),
                     [apps.messages_input(apps.question(i)) for i in CITY_IDS])

    for city in CITY_IDS:
        spans, record = found[apps.question(city)]
        first, second = loop_searches(city, 2)
        assert set(first) & set(second) and set(first) - set(second)  # the shape tested
        assert passages(record) == second
        assert record.answer == f"Answer: {second[0]}"
        assert discarded(spans) == [sc.DISCARDED_SUPERSEDED, None]


@pytest.mark.parametrize("capture_vector_stores", [True, False])
def test_the_loop_with_passages_found_in_tool_artifacts(
        tracing: InMemoryTracing, capture_vector_stores: bool) -> None:
    """With vector-store capture off the artifacts are the passages: the later one's
    passages that the first already had count again once the first is discarded."""
    handler = RagasCallbackHandler(tracing.provider, capture_vector_stores=capture_vector_stores)
    agentic_rag_loop(artifact_tool(3)).invoke(apps.messages_input(apps.question(3)),
                                              {"callbacks": [handler]})

    _, record = one_request(tracing.spans())
    first, second = loop_searches(3, 3)
    assert set(first) & set(second)
    assert passages(record) == second
    assert discarded(tracing.spans()) == [sc.DISCARDED_SUPERSEDED, None]


def test_a_paused_loop_has_no_answer_and_keeps_its_passages(tracing: InMemoryTracing) -> None:
    """``interrupt()`` before the answer: the paused run is a request without an answer
    (scored ``no_answer``) whose passages are every retrieval so far; the pause is no
    failed attempt."""
    app = agentic_rag_loop(apps.retriever_tool(CITIES), approve=True)
    handler = RagasCallbackHandler(tracing.provider)
    app.invoke(apps.messages_input(apps.question(3)),
               {"callbacks": [handler], "configurable": {"thread_id": "t-1"}})

    _, record = one_request(tracing.spans())
    first, second = loop_searches(3, 2)
    assert record.answer is None
    assert passages(record) == first + second
    assert discarded(tracing.spans()) == [None, None]
    assert handler.open_runs == 0


def test_a_node_paused_after_it_searched_keeps_its_passages(tracing: InMemoryTracing) -> None:
    """``interrupt()`` raises inside the node to pause the graph: LangGraph's control
    flow, not a failed attempt, so what the node retrieved stays the request's."""
    def search_then_approve(state: MessagesState) -> dict[str, Any]:
        docs = CITIES.as_retriever(search_kwargs={"k": 2}).invoke(state["messages"][-1].text)
        interrupt({"passages": [d.page_content for d in docs]})
        return {"messages": [HumanMessage(f"Context:\n{joined(docs)}")]}

    graph = StateGraph(MessagesState)
    graph.add_node(search_then_approve)
    graph.add_edge(START, "search_then_approve")
    graph.compile(checkpointer=InMemorySaver()).invoke(
        apps.messages_input(), {"callbacks": [RagasCallbackHandler(tracing.provider)],
                                "configurable": {"thread_id": "t-2"}})

    _, record = one_request(tracing.spans())
    assert record.answer is None
    assert passages(record) == top(CITIES, apps.QUESTION, 2)
    assert discarded(tracing.spans()) == [None]


def test_retrievals_the_app_puts_in_one_prompt_all_count(tracing: InMemoryTracing) -> None:
    """An agent that searched twice and answers with both tool results in its prompt:
    both retrievals reached the answering model (the rule as before)."""
    def agent_reply(messages: list[BaseMessage]) -> AIMessage:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if len(results) < 2:
            query = apps.QUESTION if not results else "region19"
            return AIMessage("", tool_calls=[{"name": "retrieve_context",
                                              "args": {"query": query},
                                              "id": f"call-{len(results)}"}])
        return AIMessage(f"Answer: {results[0].text.splitlines()[0]}")

    agent = create_agent(ScriptedModel(reply=agent_reply), [apps.retriever_tool(CITIES)])
    agent.invoke(apps.messages_input(), {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    _, record = one_request(tracing.spans())
    assert passages(record) == top(CITIES, apps.QUESTION, 2) + top(CITIES, "region19", 2)
    assert discarded(tracing.spans()) == [None, None]


def test_a_retried_node_keeps_only_the_attempt_that_succeeded(tracing: InMemoryTracing) -> None:
    """A LangGraph node with a retry policy that searched, then failed: the failed
    attempt's passages are not the answer's, those of the attempt that succeeded are."""
    attempts: list[int] = []

    def retrieve(state: MessagesState) -> dict[str, Any]:
        attempts.append(1)
        query = "region19" if len(attempts) == 1 else state["messages"][-1].text
        docs = CITIES.as_retriever(search_kwargs={"k": 2}).invoke(query)
        if len(attempts) == 1:
            raise ConnectionError("reranking service unreachable")
        return {"messages": [HumanMessage(f"Context:\n{joined(docs)}")]}

    def generate(state: MessagesState) -> dict[str, Any]:
        return {"messages": [ANSWERER.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node(retrieve, retry_policy=RetryPolicy(
        initial_interval=0.001, jitter=False, retry_on=ConnectionError))
    graph.add_node(generate)
    graph.add_edge(START, "retrieve")
    graph.add_edge("retrieve", "generate")
    graph.compile().invoke(apps.messages_input(),
                           {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    _, record = one_request(tracing.spans())
    assert passages(record) == top(CITIES, apps.QUESTION, 2)
    assert discarded(tracing.spans()) == [sc.DISCARDED_FAILED_ATTEMPT, None]
