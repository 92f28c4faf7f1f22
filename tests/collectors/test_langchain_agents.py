"""LangChain 1.x agents and LangGraph graphs: one trace per request whose root carries
the question and the answer, with every passage, tool call and model call under it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import agent_fakes as apps
import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from langgraph.checkpoint.memory import InMemorySaver
from opentelemetry.sdk.trace import ReadableSpan
from span_checks import by_kind, one

from ragas_trace import extract_record
from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler, _values
from ragas_trace.record import RagRecord
from ragas_trace.testing import InMemoryTracing


def one_request(spans: Sequence[ReadableSpan]) -> tuple[ReadableSpan, RagRecord]:
    """The root of the only trace, checked to be the ancestor of every other span."""
    assert len({s.context.trace_id for s in spans}) == 1
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, [s.name for s in roots]
    root = roots[0]
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        node = span
        while node.parent is not None:
            node = by_id[node.parent.span_id]
        assert node is root
    record = extract_record(spans)
    assert record is not None and record.span_id == root.context.span_id
    return root, record


def run(tracing: InMemoryTracing, app: Any, inputs: Any, **config: Any) -> Any:
    handler = RagasCallbackHandler(tracing.provider)
    result = app.invoke(inputs, config={"callbacks": [handler], **config})
    assert handler.open_runs == 0
    return result


def passages(record: RagRecord) -> list[str]:
    return [c.content for c in record.contexts]


MESSAGE_APPS: dict[str, Callable[[], Any]] = {
    "create_agent+artifact_tool": apps.rag_agent,
    "create_agent+retriever_tool": lambda: apps.rag_agent(use_retriever=True),
    "create_agent+dynamic_prompt": apps.dynamic_prompt_agent,
    "agentic_rag(MessagesState,ToolNode,grader)": apps.agentic_rag,
    "create_react_agent": apps.react_agent,
}


@pytest.mark.parametrize("make_app", MESSAGE_APPS.values(), ids=MESSAGE_APPS.keys())
def test_message_agents_make_one_complete_rag_trace(tracing: InMemoryTracing,
                                                    make_app: Callable[[], Any]) -> None:
    result = run(tracing, make_app(), apps.messages_input())

    root, record = one_request(tracing.spans())
    assert root.name == "LangGraph"
    assert root.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN
    assert record.question == apps.QUESTION
    assert record.answer == f"Answer: {apps.PASSAGE}" == result["messages"][-1].text
    assert passages(record)[0] == apps.PASSAGE
    assert len(passages(record)) == 2  # each passage once, however many ways it passed
    assert len(by_kind(tracing.spans(), sc.KIND_LLM)) >= 1


@pytest.mark.parametrize(("capture_vector_stores", "retriever_name"), [
    (True, "InMemoryVectorStore.similarity_search"),  # the search the tool made
    (False, "retrieve_context"),  # the tool's artifact
])
def test_artifact_passages_sit_under_the_tool_span(tracing: InMemoryTracing,
                                                   capture_vector_stores: bool,
                                                   retriever_name: str) -> None:
    handler = RagasCallbackHandler(tracing.provider,
                                   capture_vector_stores=capture_vector_stores)
    apps.rag_agent().invoke(apps.messages_input(), config={"callbacks": [handler]})

    spans = tracing.spans()
    root, record = one_request(spans)
    tool = one(spans, sc.KIND_TOOL)
    retriever = one(spans, sc.KIND_RETRIEVER)
    assert tool.parent.span_id == root.context.span_id
    assert retriever.parent.span_id == tool.context.span_id
    assert retriever.name == retriever_name
    assert retriever.attributes[sc.INPUT_VALUE] == apps.QUESTION
    assert retriever.attributes[sc.document_key(0, sc.DOCUMENT_ID)] == "doc-city3"
    assert tool.start_time <= retriever.start_time <= retriever.end_time <= tool.end_time
    assert tool.attributes[sc.TOOL_NAME] == "retrieve_context"
    assert tool.attributes[sc.TOOL_DESCRIPTION] == "Retrieve information to help answer a query."
    assert tool.attributes[sc.GEN_AI_TOOL_CALL_ID].startswith("call-")
    assert tool.attributes[sc.INPUT_VALUE] == f'{{"query": "{apps.QUESTION}"}}'
    assert tool.attributes[sc.INPUT_MIME_TYPE] == sc.MIME_JSON
    assert tool.attributes[sc.OUTPUT_VALUE].startswith(apps.PASSAGE)
    assert len(by_kind(spans, sc.KIND_LLM)) == 2
    assert record.prompt_tokens == 40 and record.completion_tokens == 12


def test_a_retriever_inside_a_tool_is_in_the_request_and_counted_once(
        tracing: InMemoryTracing) -> None:
    store = apps.vector_store()
    retriever = store.as_retriever(search_kwargs={"k": 2})

    @apps.tool(response_format="content_and_artifact")
    def retrieve_context(query: str) -> tuple[str, list[Document]]:
        """Search."""
        docs = retriever.invoke(query)
        return "\n".join(d.page_content for d in docs), docs

    app = apps.create_agent(apps.ScriptedAgentModel(), [retrieve_context])
    run(tracing, app, apps.messages_input())

    spans = tracing.spans()
    _, record = one_request(spans)
    (found,) = by_kind(spans, sc.KIND_RETRIEVER)
    assert found.name == "VectorStoreRetriever"
    assert found.parent.span_id == one(spans, sc.KIND_TOOL).context.span_id
    assert len(passages(record)) == 2


@pytest.mark.parametrize(("capture_vector_stores", "retriever_name"), [
    (True, "InMemoryVectorStore.similarity_search"),  # the search the node made
    (False, "retrieve"),  # the node that wrote the Documents
])
def test_state_graph_passages_come_from_the_state(tracing: InMemoryTracing,
                                                  capture_vector_stores: bool,
                                                  retriever_name: str) -> None:
    handler = RagasCallbackHandler(tracing.provider,
                                   capture_vector_stores=capture_vector_stores)
    result = apps.state_graph().invoke({"question": apps.QUESTION},
                                       config={"callbacks": [handler]})

    spans = tracing.spans()
    root, record = one_request(spans)
    retriever = one(spans, sc.KIND_RETRIEVER)
    assert retriever.name == retriever_name
    assert retriever.parent.span_id == root.context.span_id
    assert root.start_time < retriever.start_time < retriever.end_time < root.end_time
    assert record.question == apps.QUESTION
    assert record.answer == result["answer"] == f"Answer: {apps.PASSAGE}"
    # The final state carries the same Documents again: not counted twice.
    assert passages(record) == [d.page_content for d in result["context"]]


def test_documents_in_a_command_update_are_found(tracing: InMemoryTracing) -> None:
    from langgraph.types import Command

    store = apps.vector_store()

    def retrieve(state: apps.RagState) -> Command[Any]:
        return Command(update={"context": store.similarity_search(state["question"], k=1)})

    def generate(state: apps.RagState) -> dict[str, Any]:
        return {"answer": "Answer: " + state["context"][0].page_content}

    graph = apps.StateGraph(apps.RagState).add_sequence([retrieve, generate])
    graph.add_edge(apps.START, "retrieve")
    run(tracing, graph.compile(), {"question": apps.QUESTION})

    _, record = one_request(tracing.spans())
    assert passages(record) == [apps.PASSAGE]


def test_lcel_step_returning_documents_is_a_retrieval(tracing: InMemoryTracing) -> None:
    store = apps.vector_store()
    chain = (RunnableLambda(lambda q: {"question": q, "docs": store.similarity_search(q, k=1)})
             | RunnableLambda(lambda s: "Answer: " + s["docs"][0].page_content))
    run(tracing, chain, apps.QUESTION)

    _, record = one_request(tracing.spans())
    assert record.question == apps.QUESTION
    assert passages(record) == [apps.PASSAGE]


def test_thread_id_is_the_session_and_each_turn_is_its_own_trace(
        tracing: InMemoryTracing) -> None:
    app = apps.rag_agent(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "conversation-7"}}
    run(tracing, app, apps.messages_input(apps.question(3)), **config)
    run(tracing, app, apps.messages_input(apps.question(5)), **config)

    traces = list(tracing.by_trace().values())
    assert len(traces) == 2
    first, second = (one_request(spans) for spans in traces)
    for root, _ in (first, second):
        assert root.attributes[sc.SESSION_ID] == "conversation-7"
        assert root.attributes[sc.GEN_AI_CONVERSATION_ID] == "conversation-7"
    # The second turn's state holds the whole conversation: its question and answer
    # are the latest turn's.
    assert second[1].question == apps.question(5)
    assert second[1].answer == "Answer: city5 lies on river5, in region5."
    assert passages(second[1])[0] == "city5 lies on river5, in region5."


def test_llm_spans_carry_prompt_and_completion_messages(tracing: InMemoryTracing) -> None:
    run(tracing, apps.rag_agent(), apps.messages_input())

    first, second = sorted(by_kind(tracing.spans(), sc.KIND_LLM), key=lambda s: s.start_time)
    a = first.attributes
    assert a[sc.message_key("input", 0, sc.MESSAGE_ROLE)] == "system"
    assert a[sc.message_key("input", 1, sc.MESSAGE_ROLE)] == "user"
    assert a[sc.message_key("input", 1, sc.MESSAGE_CONTENT)] == apps.QUESTION
    assert a[sc.message_key("output", 0, sc.MESSAGE_ROLE)] == "assistant"
    assert a[sc.tool_call_key("output", 0, 0, sc.TOOL_CALL_FUNCTION_NAME)] == "retrieve_context"
    assert a[sc.tool_call_key("output", 0, 0, sc.TOOL_CALL_FUNCTION_ARGUMENTS)] == (
        f'{{"query": "{apps.QUESTION}"}}')
    assert a[sc.tool_call_key("output", 0, 0, sc.TOOL_CALL_ID)].startswith("call-")
    assert a[sc.LLM_MODEL_NAME] == "scripted-1"
    b = second.attributes
    assert b[sc.message_key("input", 2, sc.MESSAGE_ROLE)] == "assistant"
    assert b[sc.message_key("input", 3, sc.MESSAGE_ROLE)] == "tool"
    assert b[sc.message_key("input", 3, sc.MESSAGE_CONTENT)].startswith(apps.PASSAGE)
    assert b[sc.message_key("output", 0, sc.MESSAGE_CONTENT)] == f"Answer: {apps.PASSAGE}"


def test_a_tool_error_is_recorded_on_its_span(tracing: InMemoryTracing) -> None:
    @apps.tool
    def retrieve_context(query: str) -> str:
        """Search."""
        raise RuntimeError("index unavailable")

    app = apps.create_agent(apps.ScriptedAgentModel(), [retrieve_context])
    with pytest.raises(RuntimeError, match="index unavailable"):
        run(tracing, app, apps.messages_input())

    tool = one(tracing.spans(), sc.KIND_TOOL)
    assert tool.status.description == "RuntimeError: index unavailable"


@pytest.mark.parametrize("messages", [
    [HumanMessage(apps.QUESTION)],
    [("user", apps.QUESTION)],
    [("human", [{"type": "text", "text": apps.QUESTION}])],
    [{"role": "user", "content": [{"type": "text", "text": apps.QUESTION}]}],
    [HumanMessage("earlier"), AIMessage("reply"), {"role": "user", "content": apps.QUESTION}],
    apps.QUESTION,
])
def test_question_is_the_latest_user_message(messages: Any) -> None:
    assert _values.question_of({"messages": messages}) == apps.QUESTION


def test_answer_is_the_final_assistant_text_not_a_tool_call() -> None:
    call = AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "1"}])
    done = [HumanMessage("q"), call, ToolMessage("r", tool_call_id="1"), AIMessage("done")]
    assert _values.answer_of({"messages": done}) == "done"
    assert _values.answer_of({"messages": done[:2]}) is None  # ended on a tool call
    assert _values.answer_of({"messages": [AIMessage("old"), HumanMessage("new")]}) is None
    assert _values.answer_of({"messages": [AIMessage([{"type": "text", "text": "hi"}])]}) == "hi"
    assert _values.answer_of({"answer": "direct", "messages": done}) == "direct"


def test_answer_keys_of_graph_tutorials_and_structured_responses() -> None:
    from pydantic import BaseModel

    class Reply(BaseModel):
        city: str

    assert _values.answer_of({"question": "q", "generation": "from CRAG"}) == "from CRAG"
    call = AIMessage("", tool_calls=[{"name": "Reply", "args": {"city": "x"}, "id": "1"}])
    state = {"messages": [HumanMessage("q"), call], "structured_response": Reply(city="x")}
    assert _values.answer_of(state) == '{"city":"x"}'
    assert _values.answer_of({"messages": [], "structured_response": {"a": 1}}) == '{"a": 1}'


def test_functional_api_entrypoint_and_tasks(tracing: InMemoryTracing) -> None:
    from langgraph.func import entrypoint, task

    store = apps.vector_store()

    @task
    def retrieve(question: str) -> list[Document]:
        return store.similarity_search(question, k=2)

    @entrypoint()
    def workflow(question: str) -> str:
        docs = retrieve(question).result()
        return "Answer: " + docs[0].page_content

    assert run(tracing, workflow, apps.QUESTION) == f"Answer: {apps.PASSAGE}"
    _, record = one_request(tracing.spans())
    assert record.question == apps.QUESTION and record.answer == f"Answer: {apps.PASSAGE}"
    assert passages(record)[0] == apps.PASSAGE
    assert one(tracing.spans(), sc.KIND_RETRIEVER).name == "InMemoryVectorStore.similarity_search"


async def test_astream_events(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    events = [e async for e in apps.rag_agent().astream_events(
        apps.messages_input(), {"callbacks": [handler]}, version="v2")]
    assert events
    _, record = one_request(tracing.spans())
    assert record.question == apps.QUESTION
    assert record.answer == f"Answer: {apps.PASSAGE}"
    assert passages(record)[0] == apps.PASSAGE
    assert handler.open_runs == 0
