"""LlamaIndex agents (``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow``) with a
``QueryEngineTool``: one root per request (the agent's run), the agent's own answer,
every retrieval made by its tools, TOOL spans, LLM messages and the session id."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from llama_index.core.agent.workflow import AgentOutput, AgentWorkflow, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer, Memory
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context
from llamaindex_agent_fakes import (
    TOOL_NAME,
    answer_for,
    arun,
    function_agent,
    kb_tool,
    passages_for,
    react_agent,
    tool_calling_llm,
)
from llamaindex_fakes import (  # noqa: F401 (the fixtures are used by name)
    memories_fixture,
    tracing_fixture,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from span_checks import by_kind, one

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing

QUESTION = "Which cats like boxes?"


def _roots(spans: list[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in spans if s.parent is None]


def _ancestors(span: ReadableSpan, spans: list[ReadableSpan]) -> list[str]:
    by_id = {s.context.span_id: s for s in spans}
    names = []
    parent = span.parent
    while parent is not None:
        names.append(by_id[parent.span_id].name)
        parent = by_id[parent.span_id].parent
    return names


def _contents(spans: list[ReadableSpan]) -> set[str]:
    record = extract_record(spans)
    assert record is not None
    return {c.content for c in record.contexts}


def test_function_agent_with_a_query_engine_tool_is_one_request(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    result = arun(lambda: function_agent().run(user_msg=QUESTION))

    assert str(result) == answer_for(QUESTION)
    spans = tracing.spans()
    [root] = _roots(spans)
    assert root.name == "FunctionAgent.run"
    assert root.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    # The agent's final answer, not the tool's query engine answer.
    assert root.attributes[sc.OUTPUT_VALUE] == answer_for(QUESTION)
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    # The tool's query engine is no root of its own: no CHAIN span but the agent's.
    assert [s.name for s in by_kind(spans, sc.KIND_CHAIN)] == ["FunctionAgent.run"]

    tool = one(spans, sc.KIND_TOOL)
    assert tool.name == TOOL_NAME
    assert tool.parent is not None and tool.parent.span_id == root.context.span_id
    assert tool.attributes[sc.TOOL_NAME] == TOOL_NAME
    assert tool.attributes[sc.TOOL_DESCRIPTION] == "Answers questions about pets."
    assert tool.attributes[sc.INPUT_VALUE] == f'{{"input": "{QUESTION} #0"}}'
    assert tool.attributes[sc.INPUT_MIME_TYPE] == sc.MIME_JSON
    assert tool.attributes[sc.OUTPUT_VALUE] == "text text text text"  # MockLLM(max_tokens=4)
    retriever = one(spans, sc.KIND_RETRIEVER)
    assert _ancestors(retriever, spans) == [TOOL_NAME, "FunctionAgent.run"]

    record = extract_record(spans)
    assert record is not None
    assert (record.question, record.answer) == (QUESTION, answer_for(QUESTION))
    assert {c.content for c in record.contexts} == passages_for(QUESTION)
    assert {c.id for c in record.contexts} == {f"{QUESTION} #0-0", f"{QUESTION} #0-1"}


def test_two_tool_calls_give_one_root_with_both_retrievals(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    arun(lambda: function_agent(lookups=2).run(user_msg=QUESTION))

    spans = tracing.spans()
    [root] = _roots(spans)
    assert root.attributes[sc.OUTPUT_VALUE] == answer_for(QUESTION)
    tools = by_kind(spans, sc.KIND_TOOL)
    assert sorted(t.attributes[sc.INPUT_VALUE] for t in tools) == [
        f'{{"input": "{QUESTION} #{i}"}}' for i in range(2)]
    assert all(t.parent is not None and t.parent.span_id == root.context.span_id
               for t in tools)
    assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 2
    assert _contents(spans) == passages_for(QUESTION, lookups=2)


def test_agent_llm_spans_carry_prompt_completion_and_tool_calls(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    arun(lambda: function_agent(streaming=False).run(user_msg=QUESTION))

    spans = tracing.spans()
    agent_llms = sorted((s for s in by_kind(spans, sc.KIND_LLM)
                         if s.name.startswith("MockFunctionCallingLLM")),
                        key=lambda s: s.start_time or 0)
    assert [s.name for s in agent_llms] == ["MockFunctionCallingLLM.achat"] * 2
    first, second = (s.attributes for s in agent_llms)
    assert first[sc.message_key("input", 0, sc.MESSAGE_ROLE)] == "user"
    assert first[sc.message_key("input", 0, sc.MESSAGE_CONTENT)] == QUESTION
    assert first[sc.message_key("output", 0, sc.MESSAGE_ROLE)] == "assistant"
    assert first[sc.tool_call_key("output", 0, 0, sc.TOOL_CALL_ID)] == "call-0"
    assert first[sc.tool_call_key("output", 0, 0, sc.TOOL_CALL_FUNCTION_NAME)] == TOOL_NAME
    assert first[sc.tool_call_key("output", 0, 0, sc.TOOL_CALL_FUNCTION_ARGUMENTS)] == (
        f'{{"input": "{QUESTION} #0"}}')
    # The second call sees the tool call and its result, and answers.
    assert second[sc.message_key("input", 1, sc.MESSAGE_ROLE)] == "assistant"
    assert second[sc.tool_call_key("input", 1, 0, sc.TOOL_CALL_FUNCTION_NAME)] == TOOL_NAME
    assert second[sc.message_key("input", 2, sc.MESSAGE_ROLE)] == "tool"
    assert second[sc.message_key("input", 2, sc.MESSAGE_CONTENT)] == "text text text text"
    assert second[sc.message_key("output", 0, sc.MESSAGE_CONTENT)] == answer_for(QUESTION)
    # The tool's query engine LLM: its completion prompt holds the retrieved passage.
    [engine_llm] = [s for s in by_kind(spans, sc.KIND_LLM) if s.name.startswith("MockLLM")]
    prompt = engine_llm.attributes[sc.message_key("input", 0, sc.MESSAGE_CONTENT)]
    assert f"passage about {QUESTION} #0" in prompt
    assert engine_llm.attributes[sc.message_key("output", 0, sc.MESSAGE_CONTENT)] == (
        "text text text text")


def test_react_agent_is_one_request(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    result = arun(lambda: react_agent().run(user_msg=QUESTION))

    assert str(result) == answer_for(QUESTION)
    spans = tracing.spans()
    [root] = _roots(spans)
    assert root.name == "ReActAgent.run"
    assert root.attributes[sc.OUTPUT_VALUE] == answer_for(QUESTION)
    assert one(spans, sc.KIND_TOOL).attributes[sc.TOOL_NAME] == TOOL_NAME
    assert _contents(spans) == passages_for(QUESTION)


def test_agent_workflow_from_tools_is_one_request(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    workflow = AgentWorkflow.from_tools_or_functions([kb_tool()], llm=tool_calling_llm(2))

    result = arun(lambda: workflow.run(user_msg=QUESTION))

    assert str(result) == answer_for(QUESTION)
    spans = tracing.spans()
    [root] = _roots(spans)
    assert root.name == "AgentWorkflow.run"
    assert (root.attributes[sc.INPUT_VALUE], root.attributes[sc.OUTPUT_VALUE]) == (
        QUESTION, answer_for(QUESTION))
    assert len(by_kind(spans, sc.KIND_TOOL)) == 2
    assert _contents(spans) == passages_for(QUESTION, lookups=2)


def test_question_from_chat_history_and_chat_message(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    agent = function_agent()
    history = [ChatMessage(role="user", content="Hello"),
               ChatMessage(role="assistant", content="Hi!"),
               ChatMessage(role="user", content=QUESTION)]

    async def run() -> None:
        await agent.run(chat_history=history)
        await agent.run(user_msg=ChatMessage(role="user", content="Do dogs dig?"))

    asyncio.run(run())

    roots = sorted(_roots(tracing.spans()), key=lambda s: s.start_time or 0)
    assert [r.attributes[sc.INPUT_VALUE] for r in roots] == [QUESTION, "Do dogs dig?"]
    assert [r.attributes[sc.OUTPUT_VALUE] for r in roots] == [
        answer_for(QUESTION), answer_for("Do dogs dig?")]


def test_streamed_events_give_the_same_request(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    agent = function_agent()

    async def run() -> tuple[list[str], object]:
        handler = agent.run(user_msg=QUESTION)
        seen = [type(ev).__name__ async for ev in handler.stream_events()]
        return seen, await handler

    seen, result = asyncio.run(run())

    assert "ToolCallResult" in seen and "AgentStream" in seen
    assert isinstance(result, AgentOutput)
    spans = tracing.spans()
    [root] = _roots(spans)
    assert root.attributes[sc.OUTPUT_VALUE] == answer_for(QUESTION)
    assert _contents(spans) == passages_for(QUESTION)
    assert ToolCallResult.__name__ in seen


def test_twenty_concurrent_agent_requests_are_twenty_traces(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)
    agent = function_agent(lookups=2)
    questions = [f"question {i}" for i in range(20)]

    async def run() -> list[object]:
        return await asyncio.gather(*(agent.run(user_msg=q) for q in questions))

    results = asyncio.run(run())

    assert [str(r) for r in results] == [answer_for(q) for q in questions]
    spans = tracing.spans()
    roots = _roots(spans)
    assert len(roots) == 20
    for root in roots:
        question = root.attributes[sc.INPUT_VALUE]
        assert isinstance(question, str)
        assert root.attributes[sc.OUTPUT_VALUE] == answer_for(question)
        trace = [s for s in spans if s.context.trace_id == root.context.trace_id]
        assert len(by_kind(trace, sc.KIND_TOOL)) == 2
        assert _contents(trace) == passages_for(question, lookups=2)
    assert installation.open_runs == 0


def test_session_id_from_the_agent_memory(tracing: InMemoryTracing,
                                          memories: Callable[..., Memory]) -> None:
    llamaindex.instrument(tracing.provider)
    agent = function_agent()

    async def run() -> None:
        await agent.run(user_msg=QUESTION, memory=memories(session_id="user-42"))
        await agent.run(user_msg=QUESTION, memory=ChatMemoryBuffer.from_defaults(
            chat_store_key="conversation-7"))
        await agent.run(user_msg=QUESTION, memory=ChatMemoryBuffer.from_defaults())
        await agent.run(user_msg=QUESTION)

    asyncio.run(run())

    roots = sorted(_roots(tracing.spans()), key=lambda s: s.start_time or 0)
    assert [r.attributes.get(sc.SESSION_ID) for r in roots] == [
        "user-42", "conversation-7", None, None]
    assert roots[0].attributes[sc.GEN_AI_CONVERSATION_ID] == "user-42"


def test_runs_sharing_a_context_are_one_request_each(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    agent = function_agent()

    async def run() -> None:
        ctx = Context(agent)
        await agent.run(user_msg=QUESTION, ctx=ctx)
        await agent.run(user_msg="And dogs?", ctx=ctx)

    asyncio.run(run())

    roots = sorted(_roots(tracing.spans()), key=lambda s: s.start_time or 0)
    assert [r.attributes[sc.INPUT_VALUE] for r in roots] == [QUESTION, "And dogs?"]


def test_a_failing_tool_is_an_error_tool_span_and_the_agent_still_answers(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    def knowledge_base(input: str) -> str:
        """Answers questions about pets."""
        raise ConnectionError("index offline")

    tool = FunctionTool.from_defaults(knowledge_base, name=TOOL_NAME)
    agent = function_agent()
    agent.tools = [tool]

    arun(lambda: agent.run(user_msg=QUESTION))

    spans = tracing.spans()
    tool_span = one(spans, sc.KIND_TOOL)
    assert tool_span.status.status_code == StatusCode.ERROR
    assert tool_span.status.description == "ConnectionError: index offline"
    assert [e.name for e in tool_span.events] == ["exception"]
    [root] = _roots(spans)
    assert root.status.status_code == StatusCode.UNSET
    assert root.attributes[sc.OUTPUT_VALUE] == answer_for(QUESTION)


def test_an_agent_that_fails_ends_its_request_with_the_error(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)
    agent = function_agent()

    with pytest.raises(ValueError, match="Must provide either user_msg or chat_history"):
        arun(lambda: agent.run())

    [root] = _roots(tracing.spans())
    assert root.status.status_code == StatusCode.ERROR
    assert sc.OUTPUT_VALUE not in root.attributes
    assert installation.open_runs == 0


def test_session_id_from_a_chat_engine_memory(tracing: InMemoryTracing) -> None:
    from llamaindex_fakes import ScriptedLLM, index

    llamaindex.instrument(tracing.provider)
    memory = ChatMemoryBuffer.from_defaults(chat_store_key="conversation-9")
    engine = index().as_chat_engine(chat_mode="context", llm=ScriptedLLM(), memory=memory)

    engine.chat(QUESTION)

    [root] = _roots(tracing.spans())
    assert root.attributes[sc.SESSION_ID] == "conversation-9"


def test_tags_and_engines_scopes_select_agent_runs(tracing: InMemoryTracing) -> None:
    from llama_index.core.instrumentation.dispatcher import instrument_tags

    wanted, other = function_agent(), function_agent()
    llamaindex.instrument(tracing.provider, engines=[wanted])
    llamaindex.instrument(tracing.provider, tags={"tenant": "a"}, app_name="tenant-a")

    async def run() -> None:
        await wanted.run(user_msg="engine scope")
        await other.run(user_msg="not captured")
        with instrument_tags({"tenant": "a"}):
            await other.run(user_msg="tag scope")

    asyncio.run(run())

    roots = _roots(tracing.spans())
    # Without app_name the root has no ragas.app.name: its span name is no app label.
    assert sorted((r.attributes[sc.INPUT_VALUE], r.name, r.attributes.get(sc.RAGAS_APP_NAME))
                  for r in roots) == [("engine scope", "FunctionAgent.run", None),
                                      ("tag scope", "FunctionAgent.run", "tenant-a")]
