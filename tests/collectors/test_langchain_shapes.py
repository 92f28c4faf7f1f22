"""RAG apps in shapes the tutorials do not show but users write: LangGraph subgraphs,
``Send`` map-reduce, a supervisor over a research agent, structured-output answers,
nested retrievers (ensemble, compression, multi-query), tools that return text,
pydantic state, human-in-the-loop resumes, async retrievers, message history. Each
on the frameworks' own fakes (``GenericFakeChatModel``, ``InMemoryVectorStore``):
one trace per request whose root carries the user's question, the answer the user
got and every passage the model was given."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict

import agent_fakes as apps
import pytest
from langchain.agents import create_agent
from langchain_classic.retrievers import ContextualCompressionRetriever, EnsembleRetriever
from langchain_classic.retrievers.multi_query import MultiQueryRetriever
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.tools import tool
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, Send, interrupt
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel
from span_checks import by_kind, one
from test_langchain_agents import one_request, passages

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler, instrument, uninstrument
from ragas_trace.testing import InMemoryTracing

Q = apps.QUESTION
ANSWER = f"Answer: {apps.PASSAGE}"
STORE = apps.vector_store()
PROMPT = ChatPromptTemplate.from_messages([("system", "Context: {context}"),
                                           ("human", "{question}")])


def top(question: str, k: int) -> list[str]:
    return [d.page_content for d in STORE.similarity_search(question, k=k)]


class FakeChat(GenericFakeChatModel):
    """The framework's scripted chat model, usable by agents and structured output
    (which bind tools first)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def model(*replies: BaseMessage) -> FakeChat:
    return FakeChat(messages=iter(replies))


def tool_call(name: str, args: dict[str, Any], call_id: str = "call-1") -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


class CitedAnswer(BaseModel):
    answer: str
    citations: list[str]


class Verdict(BaseModel):
    city: str
    confidence: float


class RagState(TypedDict, total=False):
    question: str
    context: list[Document]
    answer: str


def rag_subgraph() -> Any:
    llm = model(AIMessage(ANSWER))

    def retrieve(state: RagState) -> dict[str, Any]:
        return {"context": STORE.similarity_search(state["question"], k=2)}

    def generate(state: RagState) -> dict[str, Any]:
        context = "\n".join(d.page_content for d in state["context"])
        return {"answer": llm.invoke(f"{context}\n{state['question']}").text}

    graph = StateGraph(RagState).add_sequence([retrieve, generate])
    graph.add_edge(START, "retrieve")
    return graph.compile()


# Each app: (run it with this config, the question, the passages the model was given,
# the answer the user got, how many tool calls).
Shape = tuple[Callable[[dict[str, Any]], Any], str, list[str], str, int]


def subgraph_as_node() -> Shape:
    """A compiled RAG graph added as a node of a parent graph with the same keys."""
    graph = StateGraph(RagState)
    graph.add_node("clean", lambda s: {"question": s["question"].strip()})
    graph.add_node("rag", rag_subgraph())
    graph.add_edge(START, "clean")
    graph.add_edge("clean", "rag")
    app = graph.compile()
    return (lambda c: app.invoke({"question": Q}, c)), Q, top(Q, 2), ANSWER, 0


def subgraph_called_in_a_node() -> Shape:
    """A chat graph whose node invokes a RAG graph and replies with its answer."""
    rag = rag_subgraph()

    def call_rag(state: MessagesState) -> dict[str, Any]:
        out = rag.invoke({"question": state["messages"][-1].text})
        return {"messages": [AIMessage(out["answer"])]}

    graph = StateGraph(MessagesState)
    graph.add_node(call_rag)
    graph.add_edge(START, "call_rag")
    app = graph.compile()
    return (lambda c: app.invoke(apps.messages_input(), c)), Q, top(Q, 2), ANSWER, 0


class MapState(TypedDict, total=False):
    question: str
    docs: list[Document]
    notes: Annotated[list[str], operator.add]
    answer: str


def send_map_reduce() -> Shape:
    """Retrieve, ``Send`` each Document to a summarizer, reduce the notes to an answer."""
    llm = model(AIMessage("note one"), AIMessage("note two"), AIMessage(ANSWER))

    def retrieve(state: MapState) -> dict[str, Any]:
        return {"docs": STORE.similarity_search(state["question"], k=2)}

    def fan_out(state: MapState) -> list[Send]:
        return [Send("summarize", {"doc": d}) for d in state["docs"]]

    def summarize(state: dict[str, Any]) -> dict[str, Any]:
        return {"notes": [llm.invoke(state["doc"].page_content).text]}

    def reduce(state: MapState) -> dict[str, Any]:
        return {"answer": llm.invoke("\n".join(state["notes"])).text}

    graph = StateGraph(MapState)
    graph.add_node(retrieve)
    graph.add_node("summarize", summarize)
    graph.add_node(reduce)
    graph.add_edge(START, "retrieve")
    graph.add_conditional_edges("retrieve", fan_out, ["summarize"])
    graph.add_edge("summarize", "reduce")
    graph.add_edge("reduce", END)
    app = graph.compile()
    return (lambda c: app.invoke({"question": Q}, c)), Q, top(Q, 2), ANSWER, 0


def send_to_research_subgraphs() -> Shape:
    """``Send`` one sub-query each to a research subgraph; Documents reduced in a list."""

    class Research(TypedDict, total=False):
        query: str
        docs: list[Document]

    class Plan(TypedDict, total=False):
        question: str
        docs: Annotated[list[Document], operator.add]
        answer: str

    sub = StateGraph(Research)
    sub.add_node("search", lambda s: {"docs": STORE.similarity_search(s["query"], k=1)})
    sub.add_edge(START, "search")
    llm = model(AIMessage(ANSWER))
    graph = StateGraph(Plan)
    graph.add_node("plan", lambda s: {})
    graph.add_node("research", sub.compile())
    graph.add_node("write", lambda s: {"answer": llm.invoke(str(len(s["docs"]))).text})
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", lambda s: [Send("research", {"query": q}) for q in (
        s["question"], apps.question(5))], ["research"])
    graph.add_edge("research", "write")
    app = graph.compile()
    return ((lambda c: app.invoke({"question": Q}, c)), Q,
            top(Q, 1) + top(apps.question(5), 1), ANSWER, 0)


def supervisor_with_research_agent() -> Shape:
    """A supervisor node routes to a ``create_agent`` research agent (a node of the
    graph, with a retriever tool), then answers from its report."""
    research = create_agent(model(tool_call("retrieve_context", {"query": Q}),
                                  AIMessage(f"Report: {apps.PASSAGE}")),
                            [apps.retriever_tool(STORE)], name="research_agent")
    boss = model(AIMessage(f"Final: {apps.PASSAGE}"))

    def supervisor(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].name == "research_agent":
            return {"messages": [boss.invoke(state["messages"])]}
        return {}

    def route(state: MessagesState) -> str:
        return END if state["messages"][-1].type == "ai" and (
            state["messages"][-1].name != "research_agent") else "research_agent"

    graph = StateGraph(MessagesState)
    graph.add_node(supervisor)
    graph.add_node("research_agent", research)
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", route, ["research_agent", END])
    graph.add_edge("research_agent", "supervisor")
    app = graph.compile()
    return ((lambda c: app.invoke(apps.messages_input(), c)), Q, top(Q, 2),
            f"Final: {apps.PASSAGE}", 1)


def structured_output_chain() -> Shape:
    """LCEL ending in ``with_structured_output(CitedAnswer)``: the chain returns a
    pydantic object. Its ``answer`` field is what the user reads (as the ``answer`` of
    a dict output is), so it is the answer; a model without such a field is recorded
    as its JSON (below)."""
    llm = model(tool_call("CitedAnswer", {"answer": ANSWER, "citations": ["doc-city3"]}))
    context = STORE.as_retriever(search_kwargs={"k": 2}) | RunnableLambda(
        lambda docs: "\n".join(d.page_content for d in docs))
    chain = ({"context": context, "question": RunnablePassthrough()} | PROMPT
             | llm.with_structured_output(CitedAnswer))
    return (lambda c: chain.invoke(Q, c)), Q, top(Q, 2), ANSWER, 0


def structured_output_in_a_graph() -> Shape:
    """A generate node whose structured output (a JSON-schema dict) is the state's answer."""
    schema = {"title": "Answer", "type": "object",
              "properties": {"answer": {"type": "string"}, "sources": {"type": "array"}}}
    llm = model(tool_call("Answer", {"answer": ANSWER, "sources": ["kb/city3.md"]}))

    class State(TypedDict, total=False):
        question: str
        context: list[Document]
        answer: dict[str, Any]

    graph = StateGraph(State).add_sequence([
        ("retrieve", lambda s: {"context": STORE.similarity_search(s["question"], k=2)}),
        ("generate", lambda s: {"answer": llm.with_structured_output(schema).invoke(
            s["question"])})])
    graph.add_edge(START, "retrieve")
    app = graph.compile()
    return (lambda c: app.invoke({"question": Q}, c)), Q, top(Q, 2), ANSWER, 0


class PydanticState(BaseModel):
    question: str
    context: list[Document] = []
    answer: str = ""


def pydantic_state_graph() -> Shape:
    """A graph over a pydantic state, invoked with an instance of it."""
    llm = model(AIMessage(ANSWER))
    graph = StateGraph(PydanticState).add_sequence([
        ("retrieve", lambda s: {"context": STORE.similarity_search(s.question, k=2)}),
        ("generate", lambda s: {"answer": llm.invoke(s.question).text})])
    graph.add_edge(START, "retrieve")
    app = graph.compile()
    return (lambda c: app.invoke(PydanticState(question=Q), c)), Q, top(Q, 2), ANSWER, 0


class FirstClause(BaseDocumentCompressor):
    """Keeps the first two Documents, cut at their first comma."""

    def compress_documents(self, documents: Any, query: str,
                           callbacks: Callbacks | None = None) -> list[Document]:
        return [Document(d.page_content.split(",")[0]) for d in documents[:2]]


def compressed_ensemble() -> Shape:
    """Compression over an ensemble of two retrievers: four retriever runs, but the
    model is given only the compressor's output."""
    ensemble = EnsembleRetriever(retrievers=[STORE.as_retriever(search_kwargs={"k": 2}),
                                             STORE.as_retriever(search_kwargs={"k": 3})])
    retriever = ContextualCompressionRetriever(base_compressor=FirstClause(),
                                               base_retriever=ensemble)
    chain = ({"context": retriever, "question": RunnablePassthrough()} | PROMPT
             | model(AIMessage(ANSWER)) | StrOutputParser())
    return ((lambda c: chain.invoke(Q, c)), Q, [p.split(",")[0] for p in top(Q, 2)],
            ANSWER, 0)


def multi_query() -> Shape:
    """``MultiQueryRetriever``: a model writes two queries, the base retriever runs for
    each, and the union is what the model is given."""
    queries = model(AIMessage(f"{Q}\n{apps.question(5)}"))
    retriever = MultiQueryRetriever.from_llm(
        retriever=STORE.as_retriever(search_kwargs={"k": 1}), llm=queries)
    chain = ({"context": retriever, "question": RunnablePassthrough()} | PROMPT
             | model(AIMessage(ANSWER)) | StrOutputParser())
    return ((lambda c: chain.invoke(Q, c)), Q, top(Q, 1) + top(apps.question(5), 1),
            ANSWER, 0)


def text_tool_agent() -> Shape:
    """An agent whose tool joins ``similarity_search`` results into its string output:
    no retriever run and no artifact; the search itself gives the passages."""

    @tool
    def search_docs(query: str) -> str:
        """Search the knowledge base."""
        return "\n\n".join(top(query, 2))

    agent = create_agent(model(tool_call("search_docs", {"query": Q}), AIMessage(ANSWER)),
                         [search_docs])
    return (lambda c: agent.invoke(apps.messages_input(), c)), Q, top(Q, 2), ANSWER, 1


PARALLEL_SHAPES = {send_to_research_subgraphs}


def subagent_as_a_tool() -> Shape:
    """LangChain 1.x's multi-agent "subagents as tools": a supervisor agent's tool
    invokes a research agent, whose own retriever tool retrieves."""
    research = create_agent(model(tool_call("retrieve_context", {"query": Q}),
                                  AIMessage(f"Report: {apps.PASSAGE}")),
                            [apps.retriever_tool(STORE)])

    @tool
    def ask_researcher(query: str) -> str:
        """Ask the research agent."""
        return str(research.invoke(apps.messages_input(query))["messages"][-1].text)

    boss = create_agent(model(tool_call("ask_researcher", {"query": Q}),
                              AIMessage(f"Final: {apps.PASSAGE}")), [ask_researcher])
    return ((lambda c: boss.invoke(apps.messages_input(), c)), Q, top(Q, 2),
            f"Final: {apps.PASSAGE}", 2)


class AsyncOnlyRetriever(BaseRetriever):
    """A retriever with its own ``_aget_relevant_documents`` (an async client)."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        raise AssertionError("the async path must be used")

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: Any) -> list[Document]:
        await asyncio.sleep(0)
        return await STORE.asimilarity_search(query, k=2)


def async_retriever_chain() -> Shape:
    chain = (RunnableParallel(context=AsyncOnlyRetriever(), question=RunnablePassthrough())
             | PROMPT | model(AIMessage(ANSWER)) | StrOutputParser())
    return (lambda c: asyncio.run(chain.ainvoke(Q, c))), Q, top(Q, 2), ANSWER, 0


def async_tool_agent_streamed() -> Shape:
    """An async tool awaiting the async retriever, the agent streamed token by token."""

    @tool
    async def search(query: str) -> str:
        """Search."""
        return "\n".join(d.page_content for d in await AsyncOnlyRetriever().ainvoke(query))

    agent = create_agent(apps.ScriptedAgentModel(tool_name="search"), [search])

    async def consume(config: dict[str, Any]) -> None:
        async for _ in agent.astream(apps.messages_input(), config, stream_mode="messages"):
            pass

    return (lambda c: asyncio.run(consume(c))), Q, top(Q, 2), ANSWER, 1


def astream_events_graph() -> Shape:
    """A custom-state graph consumed through ``astream_events(version="v2")``."""
    app = rag_subgraph()

    async def consume(config: dict[str, Any]) -> None:
        async for _ in app.astream_events({"question": Q}, config, version="v2"):
            pass

    return (lambda c: asyncio.run(consume(c))), Q, top(Q, 2), ANSWER, 0


SHAPES: dict[str, Callable[[], Shape]] = {f.__name__: f for f in (
    subgraph_as_node, subgraph_called_in_a_node, send_map_reduce, send_to_research_subgraphs,
    supervisor_with_research_agent, subagent_as_a_tool, structured_output_chain,
    structured_output_in_a_graph, pydantic_state_graph, compressed_ensemble, multi_query,
    text_tool_agent,
    async_retriever_chain, async_tool_agent_streamed, astream_events_graph)}


@pytest.mark.parametrize("make", SHAPES.values(), ids=SHAPES.keys())
def test_shape_is_one_complete_rag_request(tracing: InMemoryTracing,
                                           make: Callable[[], Shape]) -> None:
    run, question, expected, answer, tools = make()
    handler = RagasCallbackHandler(tracing.provider)
    run({"callbacks": [handler]})

    root, record = one_request(tracing.spans())
    assert root.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN
    assert record.question == question
    assert record.answer == answer
    if make in PARALLEL_SHAPES:
        # Branches run at once: their passages are in the order their searches began.
        assert sorted(passages(record)) == sorted(expected)
        assert len(passages(record)) == len(expected)
    else:
        assert passages(record) == expected
    assert len(by_kind(tracing.spans(), sc.KIND_TOOL)) == tools
    assert handler.open_runs == 0


def test_a_structured_answer_without_an_answer_field_is_its_json(
        tracing: InMemoryTracing) -> None:
    llm = model(tool_call("Verdict", {"city": "city3", "confidence": 0.9}))
    chain = ({"context": STORE.as_retriever(), "question": RunnablePassthrough()} | PROMPT
             | llm.with_structured_output(Verdict))
    chain.invoke(Q, {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    _, record = one_request(tracing.spans())
    assert record.answer == '{"city":"city3","confidence":0.9}'


def test_nested_retrievers_make_one_retriever_span_with_the_outer_documents(
        tracing: InMemoryTracing) -> None:
    run, *_ = compressed_ensemble()
    run({"callbacks": [RagasCallbackHandler(tracing.provider)]})

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert retriever.name == "ContextualCompressionRetriever"
    assert retriever.attributes[sc.INPUT_VALUE] == Q


def test_the_query_writing_model_of_a_multi_query_retriever_is_under_its_span(
        tracing: InMemoryTracing) -> None:
    run, *_ = multi_query()
    run({"callbacks": [RagasCallbackHandler(tracing.provider)]})

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    writer = min(by_kind(tracing.spans(), sc.KIND_LLM), key=lambda s: s.start_time or 0)
    assert writer.parent is not None and writer.parent.span_id == retriever.context.span_id


def test_tool_text_passage_sits_under_its_tool_span(tracing: InMemoryTracing) -> None:
    """With vector-store capture off (or a tool over a search API), the tool's text
    output, which is what the model answered from, is the passage."""
    run, *_ = text_tool_agent()
    run({"callbacks": [RagasCallbackHandler(tracing.provider, capture_vector_stores=False)]})

    tool_span = one(tracing.spans(), sc.KIND_TOOL)
    passage = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert passage.name == "search_docs"
    assert passage.parent is not None and passage.parent.span_id == tool_span.context.span_id
    assert passage.attributes[sc.INPUT_VALUE] == Q
    assert (passage.start_time, passage.end_time) == (tool_span.start_time, tool_span.end_time)
    _, record = one_request(tracing.spans())
    assert passages(record) == ["\n\n".join(top(Q, 2))]


def test_tool_search_is_a_retriever_span_under_its_tool_span(tracing: InMemoryTracing) -> None:
    run, *_ = text_tool_agent()
    run({"callbacks": [RagasCallbackHandler(tracing.provider)]})

    tool_span = one(tracing.spans(), sc.KIND_TOOL)
    search = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert search.name == "InMemoryVectorStore.similarity_search"
    assert search.parent is not None and search.parent.span_id == tool_span.context.span_id
    assert search.attributes[sc.INPUT_VALUE] == Q
    assert tool_span.start_time <= search.start_time <= search.end_time <= tool_span.end_time


def test_tool_text_is_no_passage_when_the_request_retrieved(tracing: InMemoryTracing) -> None:
    """With a retriever tool and a text tool, the passages are the retriever's: the
    fallback is for requests that would otherwise have none."""

    @tool
    def clock(query: str) -> str:
        """The time."""
        return "It is noon."

    calls = AIMessage("", tool_calls=[
        {"name": "retrieve_context", "args": {"query": Q}, "id": "a"},
        {"name": "clock", "args": {"query": "now"}, "id": "b"}])
    agent = create_agent(model(calls, AIMessage(ANSWER)), [apps.retriever_tool(STORE), clock])
    agent.invoke(apps.messages_input(), {"callbacks": [RagasCallbackHandler(tracing.provider)]})

    _, record = one_request(tracing.spans())
    assert passages(record) == top(Q, 2)
    assert len(by_kind(tracing.spans(), sc.KIND_TOOL)) == 2


async def test_twenty_concurrent_text_tool_requests_keep_their_own_passage(
        tracing: InMemoryTracing) -> None:
    @tool
    def search_docs(query: str) -> str:
        """Search the knowledge base."""
        return top(query, 1)[0]

    agent = create_agent(apps.ScriptedAgentModel(tool_name="search_docs"), [search_docs])
    handler = RagasCallbackHandler(tracing.provider)
    await agent.abatch([apps.messages_input(apps.question(i)) for i in range(20)],
                       {"callbacks": [handler]})

    traces = list(tracing.by_trace().values())
    assert len(traces) == 20
    for spans in traces:
        _, record = one_request(spans)
        assert record.question is not None
        assert passages(record) == top(record.question, 1)
        assert record.answer == f"Answer: {passages(record)[0]}"
    assert handler.open_runs == 0


def test_documents_a_tool_returns_are_passages(tracing: InMemoryTracing) -> None:
    """A tool returning ``list[Document]``: called directly it hands back the
    Documents; through a tool call LangChain turns them into the ToolMessage's text,
    which is then the passage (it is what the model read)."""

    @tool
    def lookup(query: str) -> list[Document]:
        """Look up passages."""
        return STORE.similarity_search(query, k=1)

    def node(state: MessagesState) -> dict[str, Any]:
        docs = lookup.invoke({"query": state["messages"][-1].text})
        return {"messages": [AIMessage(f"Answer: {docs[0].page_content}")]}

    graph = StateGraph(MessagesState)
    graph.add_node(node)
    graph.add_edge(START, "node")
    handler = RagasCallbackHandler(tracing.provider)
    graph.compile().invoke(apps.messages_input(), {"callbacks": [handler]})
    _, record = one_request(tracing.spans())
    assert passages(record) == top(Q, 1)

    tracing.clear()
    agent = create_agent(model(tool_call("lookup", {"query": Q}), AIMessage(ANSWER)), [lookup])
    agent.invoke(apps.messages_input(), {"callbacks": [handler]})
    _, record = one_request(tracing.spans())
    [text] = passages(record)
    assert apps.PASSAGE in text


def test_resumed_graph_takes_question_and_passages_from_its_state(
        tracing: InMemoryTracing) -> None:
    """Human in the loop: the first run stops at ``interrupt()`` (no answer yet); the
    run resumed with ``Command(resume=...)`` has no question in its input and
    retrieves nothing itself, but answers the question in its state from the passages
    in its state."""

    class State(MessagesState):
        context: list[Document]

    llm = model(AIMessage(ANSWER))

    def approve(state: State) -> dict[str, Any]:
        interrupt({"passages": [d.page_content for d in state["context"]]})
        return {}

    graph = StateGraph(State).add_sequence([
        ("retrieve", lambda s: {"context": STORE.similarity_search(s["messages"][-1].text,
                                                                   k=2)}),
        ("approve", approve),
        ("generate", lambda s: {"messages": [llm.invoke(s["messages"])]})])
    graph.add_edge(START, "retrieve")
    app = graph.compile(checkpointer=InMemorySaver())
    handler = RagasCallbackHandler(tracing.provider)
    config: Any = {"callbacks": [handler], "configurable": {"thread_id": "review-1"}}
    app.invoke(apps.messages_input(), config)
    paused = tracing.spans()
    tracing.clear()
    app.invoke(Command(resume=True), config)

    _, first = one_request(paused)
    assert (first.question, first.answer, passages(first)) == (Q, None, top(Q, 2))
    root, second = one_request(tracing.spans())
    assert (second.question, second.answer, passages(second)) == (Q, ANSWER, top(Q, 2))
    assert root.attributes[sc.SESSION_ID] == "review-1"
    assert handler.open_runs == 0


def test_checkpointed_graph_turns_carry_their_own_question_and_passages(
        tracing: InMemoryTracing) -> None:
    class State(MessagesState):
        context: list[Document]

    llm = model(AIMessage("Answer: first"), AIMessage(ANSWER))
    graph = StateGraph(State).add_sequence([
        ("retrieve", lambda s: {"context": STORE.similarity_search(s["messages"][-1].text,
                                                                   k=2)}),
        ("generate", lambda s: {"messages": [llm.invoke(s["messages"])]})])
    graph.add_edge(START, "retrieve")
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"callbacks": [RagasCallbackHandler(tracing.provider)],
                   "configurable": {"thread_id": "chat-2"}}
    app.invoke(apps.messages_input(apps.question(5)), config)
    tracing.clear()
    app.invoke(apps.messages_input(), config)

    root, record = one_request(tracing.spans())
    assert (record.question, record.answer, passages(record)) == (Q, ANSWER, top(Q, 2))
    assert root.attributes[sc.SESSION_ID] == "chat-2"


def test_message_history_turns_are_requests_of_their_own(tracing: InMemoryTracing) -> None:
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.prompts import MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    prompt = ChatPromptTemplate.from_messages([
        ("system", "Context: {context}"), MessagesPlaceholder("history"), ("human", "{input}")])
    chain = (RunnablePassthrough.assign(
        context=(lambda x: x["input"]) | STORE.as_retriever(search_kwargs={"k": 2}))
        | prompt | model(AIMessage("Answer: first"), AIMessage(ANSWER)) | StrOutputParser())
    history = InMemoryChatMessageHistory()
    with pytest.warns(DeprecationWarning):
        app = RunnableWithMessageHistory(chain, lambda session_id: history,
                                         input_messages_key="input",
                                         history_messages_key="history")
    config: Any = {"callbacks": [RagasCallbackHandler(tracing.provider)],
                   "configurable": {"session_id": "s-1"}}
    app.invoke({"input": apps.question(5)}, config)
    tracing.clear()
    app.invoke({"input": Q}, config)

    root, record = one_request(tracing.spans())
    assert (record.question, record.answer, passages(record)) == (Q, ANSWER, top(Q, 2))
    # Given only as ``configurable``, which langchain-core copies into the metadata of
    # LangSmith's tracer alone: read from the run config.
    assert root.attributes[sc.SESSION_ID] == "s-1"


def test_message_history_session_id_under_ainvoke_and_batch(tracing: InMemoryTracing) -> None:
    from langchain_core.chat_history import InMemoryChatMessageHistory
    from langchain_core.prompts import MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"),
                                               ("human", "{input}")])
    histories: dict[str, InMemoryChatMessageHistory] = {}
    with pytest.warns(DeprecationWarning):
        app = RunnableWithMessageHistory(
            prompt | model(*[AIMessage(ANSWER)] * 3) | StrOutputParser(),
            lambda session_id: histories.setdefault(session_id, InMemoryChatMessageHistory()),
            input_messages_key="input", history_messages_key="history")
    handler = RagasCallbackHandler(tracing.provider)

    def config(session: str) -> Any:
        return {"callbacks": [handler], "configurable": {"session_id": session}}

    asyncio.run(app.ainvoke({"input": Q}, config("a-1")))
    app.batch([{"input": Q}, {"input": Q}], [config("b-1"), config("b-2")])

    roots = sorted(str(s.attributes[sc.SESSION_ID]) for s in tracing.spans() if s.parent is None)
    assert roots == ["a-1", "b-1", "b-2"]
    assert sorted(histories) == ["a-1", "b-1", "b-2"]


@pytest.fixture
def scored() -> Iterator[Callable[[], list[ReadableSpan]]]:
    """``setup()`` with the local judge and ``instrument()``: the app adds one line."""
    exporter = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="shapes", judge="local", exporter=exporter,
                           tracer_provider=TracerProvider())
    instrument(rt.tracer_provider)

    def spans() -> list[ReadableSpan]:
        assert rt.force_flush(timeout_s=30)
        return list(exporter.get_finished_spans())

    yield spans
    uninstrument()
    assert rt.shutdown(timeout_s=10)


@pytest.mark.parametrize("name", ["structured_output_chain", "compressed_ensemble",
                                  "text_tool_agent", "send_to_research_subgraphs"])
def test_shape_is_scored_with_nothing_missing(scored: Callable[[], list[ReadableSpan]],
                                              name: str) -> None:
    run, question, _, answer, _ = SHAPES[name]()
    run({})

    [root] = [s for s in scored() if s.parent is None
              and (s.attributes or {}).get(sc.SPAN_KIND) == sc.KIND_CHAIN]
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert sc.RAGAS_EVALUATION_REASON not in root.attributes
    assert root.attributes[sc.INPUT_VALUE] == question
    assert root.attributes[sc.OUTPUT_VALUE] == answer
