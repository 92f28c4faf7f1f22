"""LlamaIndex apps in shapes beyond the tutorials: chat engines over several turns,
citation engines, workflows that fan out and collect, stream their own events or run
an agent in a step, agents with plain function tools, handoffs and shared contexts,
and structured-output answers. On llama-index-core's own fakes (``MockLLM``,
``MockFunctionCallingLLM``): one root per request with the user's question, the
answer the user got and every passage the model was given."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
from llama_index.core.base.llms.types import (
    ChatMessage,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.chat_engine import CondensePlusContextChatEngine
from llama_index.core.llms import CustomLLM, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import CitationQueryEngine, RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step
from llamaindex_agent_fakes import arun, react_agent
from llamaindex_fakes import (  # noqa: F401 (the fixtures are used by name)
    EchoRetriever,
    ScriptedLLM,
    memories_fixture,
    tracing_fixture,
)
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel
from span_checks import by_kind, one

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.record import RagRecord
from ragas_trace.testing import InMemoryTracing

Q = "Which cats like boxes?"


def about(*queries: str) -> list[str]:
    """What ``EchoRetriever`` returns for each query (two passages each)."""
    return [f"passage about {q}" for q in queries for _ in range(2)]


def search_kb(query: str) -> str:
    """Search the pet knowledge base."""
    return "\n".join(n.get_content() for n in EchoRetriever().retrieve(query))


def tool_llm(tool: str, final: str) -> MockFunctionCallingLLM:
    """Calls ``tool`` with the user's message as ``query``, then answers ``final``."""

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role="assistant", content=final)
        question = next(m.content for m in reversed(messages) if m.role == MessageRole.USER)
        return ChatMessage(role="assistant", blocks=[ToolCallBlock(
            tool_call_id="call-1", tool_name=tool, tool_kwargs={"query": question})])

    return MockFunctionCallingLLM(response_generator=reply, is_chat_model=True)


def request(spans: Sequence[ReadableSpan]) -> tuple[ReadableSpan, RagRecord]:
    """The only root, which every span descends from, and its record."""
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, [s.name for s in roots]
    assert {s.context.trace_id for s in spans} == {roots[0].context.trace_id}
    record = extract_record(spans)
    assert record is not None and record.span_id == roots[0].context.span_id
    return roots[0], record


def contents(record: RagRecord) -> list[str]:
    return [c.content for c in record.contexts]


class SubQuery(Event):
    query: str


class Retrieved(Event):
    nodes: list[NodeWithScore]


class FanOutWorkflow(Workflow):
    """Sends one event per sub-query to a retrieve step with three workers, collects
    the results (``collect_events``) and answers; the question kept in ``ctx.store``."""

    @step
    async def plan(self, ctx: Context, ev: StartEvent) -> SubQuery | None:
        subs = [ev.question, "dogs", "sinks"]
        await ctx.store.set("question", ev.question)
        await ctx.store.set("expected", len(subs))
        for sub in subs:
            ctx.send_event(SubQuery(query=sub))
        return None

    @step(num_workers=3)
    async def retrieve(self, ev: SubQuery) -> Retrieved:
        return Retrieved(nodes=await EchoRetriever().aretrieve(ev.query))

    @step
    async def combine(self, ctx: Context, ev: Retrieved) -> StopEvent | None:
        events = ctx.collect_events(ev, [Retrieved] * await ctx.store.get("expected"))
        if events is None:
            return None
        context = "\n".join(n.get_content() for e in events for n in e.nodes)
        reply = await ScriptedLLM().acomplete(f"{context}\n{await ctx.store.get('question')}")
        return StopEvent(result=reply.text)


class Token(Event):
    delta: str


class StreamingWorkflow(Workflow):
    """Streams the model's tokens to the caller as its own events."""

    @step
    async def answer(self, ctx: Context, ev: StartEvent) -> StopEvent:
        nodes = await EchoRetriever().aretrieve(ev.query)
        text = ""
        stream = await ScriptedLLM().astream_complete(
            "\n".join(n.get_content() for n in nodes) + ev.query)
        async for part in stream:
            ctx.write_event_to_stream(Token(delta=part.delta or ""))
            text += part.delta or ""
        return StopEvent(result=text)


class AgentInAStep(Workflow):
    @step
    async def ask(self, ev: StartEvent) -> StopEvent:
        agent = FunctionAgent(tools=[search_kb], llm=tool_llm("search_kb", "Inner answer."))
        out = await agent.run(user_msg=ev.query)
        return StopEvent(result=f"Outer: {out.response.content}")


async def streamed(handler: Any) -> Any:
    async for _ in handler.stream_events():
        pass
    return await handler


async def handoff() -> Any:
    def research(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if not any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role="assistant", blocks=[ToolCallBlock(
                tool_call_id="r1", tool_name="search_kb", tool_kwargs={"query": Q})])
        return ChatMessage(role="assistant", blocks=[ToolCallBlock(
            tool_call_id="h1", tool_name="handoff",
            tool_kwargs={"to_agent": "WriteAgent", "reason": "facts found"})])

    researcher = FunctionAgent(
        name="ResearchAgent", description="Finds facts.", tools=[search_kb],
        llm=MockFunctionCallingLLM(response_generator=research, is_chat_model=True),
        can_handoff_to=["WriteAgent"])
    writer = FunctionAgent(
        name="WriteAgent", description="Writes the answer.", tools=[],
        llm=MockFunctionCallingLLM(response_generator=lambda m, **k: ChatMessage(
            role="assistant", content="Written: cats like boxes."), is_chat_model=True))
    return await AgentWorkflow(agents=[researcher, writer], root_agent="ResearchAgent").run(
        user_msg=Q)


# name -> (run, root span name, answer, passages, tool calls)
SHAPES: dict[str, tuple[Callable[[], Awaitable[Any]], str, str, list[str], int]] = {
    "workflow_fan_out_collect": (lambda: FanOutWorkflow(timeout=10).run(question=Q),
                                 "FanOutWorkflow.run", "Most cats like boxes.",
                                 about(Q, "dogs", "sinks"), 0),
    "workflow_streaming_its_events": (lambda: streamed(StreamingWorkflow(timeout=10).run(
        query=Q)), "StreamingWorkflow.run", "Most cats like boxes.", about(Q), 0),
    "workflow_running_an_agent_in_a_step": (lambda: AgentInAStep(timeout=10).run(query=Q),
                                            "AgentInAStep.run", "Outer: Inner answer.",
                                            about(Q), 1),
    "function_agent_with_a_function_tool": (
        lambda: FunctionAgent(tools=[search_kb], llm=tool_llm("search_kb", "Boxes.")).run(
            user_msg=Q), "FunctionAgent.run", "Boxes.", about(Q), 1),
    "react_agent_stream_events": (lambda: streamed(react_agent().run(user_msg=Q)),
                                  "ReActAgent.run", f"Final answer about {Q}.",
                                  about(f"{Q} #0"), 1),
    "agent_workflow_handoff": (handoff, "AgentWorkflow.run", "Written: cats like boxes.",
                               about(Q), 2),
}


@pytest.mark.parametrize("name", SHAPES)
def test_workflow_and_agent_shapes_are_one_request(tracing: InMemoryTracing,
                                                   name: str) -> None:
    run, root_name, answer, passages, tools = SHAPES[name]
    llamaindex.instrument(tracing.provider)
    arun(run)

    root, record = request(tracing.spans())
    assert root.name == root_name
    assert (record.question, record.answer) == (Q, answer)
    assert sorted(contents(record)) == sorted(passages)
    assert len(by_kind(tracing.spans(), sc.KIND_TOOL)) == tools


def test_condense_plus_context_second_turn_is_its_own_request(
        tracing: InMemoryTracing, memories: Callable[..., Memory]) -> None:
    engine = CondensePlusContextChatEngine.from_defaults(retriever=EchoRetriever(),
                                                         llm=MockLLM(max_tokens=4),
                                                         memory=memories())
    llamaindex.instrument(tracing.provider)
    engine.chat("Tell me about dogs.")
    first = tracing.by_trace()
    tracing.clear()
    engine.chat(Q)

    root, record = request(tracing.spans())
    # The user's message, not the question the engine condensed it into.
    assert record.question == Q
    assert record.answer == "text text text text"
    [previous] = first.values()
    assert root.attributes[sc.SESSION_ID] == request(previous)[0].attributes[sc.SESSION_ID]
    # The condensed question was retrieved with (MockLLM echoes the prompt's words).
    assert len(contents(record)) == 2


def test_citation_engine_records_the_retrieved_nodes(tracing: InMemoryTracing) -> None:
    engine = CitationQueryEngine(retriever=EchoRetriever(), llm=MockLLM(max_tokens=4))
    llamaindex.instrument(tracing.provider)
    engine.query(Q)

    root, record = request(tracing.spans())
    assert root.name == "CitationQueryEngine.query"
    assert (record.question, record.answer) == (Q, "text text text text")
    assert contents(record) == about(Q)


def test_agent_turns_sharing_a_context_carry_their_own_question(
        tracing: InMemoryTracing) -> None:
    agent = FunctionAgent(tools=[search_kb], llm=tool_llm("search_kb", "Turn answer."))
    llamaindex.instrument(tracing.provider)

    async def two_turns() -> None:
        ctx = Context(agent)
        await agent.run(user_msg="dogs", ctx=ctx)
        tracing.clear()
        await agent.run(user_msg=Q, ctx=ctx)

    arun(two_turns)
    _, record = request(tracing.spans())
    assert (record.question, record.answer, contents(record)) == (Q, "Turn answer.", about(Q))


class CitedAnswer(BaseModel):
    answer: str
    citations: list[str]


class Verdict(BaseModel):
    verdict: str
    confidence: float


class JsonLLM(CustomLLM):
    """Replies with the JSON of a structured answer."""

    reply: str = '{"answer": "Cats like boxes.", "citations": ["doc-0"]}'

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="json-1")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.reply)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False,
                        **kwargs: Any) -> CompletionResponseGen:
        yield CompletionResponse(text=self.reply, delta=self.reply)


class StructuredWorkflow(Workflow):
    """Ends with ``astructured_predict``: the stop event's result is a pydantic model."""

    def __init__(self, output: type[BaseModel], reply: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output, self.reply = output, reply

    @step
    async def answer(self, ev: StartEvent) -> StopEvent:
        nodes = await EchoRetriever().aretrieve(ev.query)
        result = await JsonLLM(reply=self.reply).astructured_predict(
            self.output, PromptTemplate("{context}\n{query}"),
            context="\n".join(n.get_content() for n in nodes), query=ev.query)
        return StopEvent(result=result)


def test_structured_answers_are_their_answer_field(tracing: InMemoryTracing) -> None:
    """An experienced user reads the ``answer`` field of a cited answer; Phoenix shows
    the whole model only when it has no such field (then it is its JSON)."""
    llamaindex.instrument(tracing.provider)
    engine = RetrieverQueryEngine.from_args(EchoRetriever(), llm=JsonLLM(),
                                            output_cls=CitedAnswer)
    engine.query(Q)
    _, record = request(tracing.spans())
    assert (record.answer, contents(record)) == ("Cats like boxes.", about(Q))

    tracing.clear()
    arun(lambda: StructuredWorkflow(CitedAnswer, JsonLLM().reply, timeout=10).run(query=Q))
    _, record = request(tracing.spans())
    assert (record.answer, contents(record)) == ("Cats like boxes.", about(Q))

    tracing.clear()
    arun(lambda: StructuredWorkflow(Verdict, '{"verdict": "yes", "confidence": 0.5}',
                                    timeout=10).run(query=Q))
    root, record = request(tracing.spans())
    assert root.attributes[sc.OUTPUT_VALUE] == '{"verdict":"yes","confidence":0.5}'


def web_search(query: str) -> str:
    """Search the web."""
    return f"Cats like boxes because boxes are warm (web result for {query})."


def test_text_a_tool_returned_is_the_passage_when_nothing_was_retrieved(
        tracing: InMemoryTracing) -> None:
    """A function tool that calls a search API makes no retrieval: the text it
    returned is what the agent answered from, so it is the request's passage."""
    llamaindex.instrument(tracing.provider)
    arun(lambda: FunctionAgent(tools=[web_search], llm=tool_llm("web_search", "Boxes.")).run(
        user_msg=Q))

    _, record = request(tracing.spans())
    assert contents(record) == [web_search(Q)]
    tool, passage = one(tracing.spans(), sc.KIND_TOOL), one(tracing.spans(), sc.KIND_RETRIEVER)
    assert passage.name == "web_search"
    assert passage.parent is not None and passage.parent.span_id == tool.context.span_id
    assert passage.attributes[sc.INPUT_VALUE] == Q
    assert (passage.start_time, passage.end_time) == (tool.start_time, tool.end_time)


def test_tool_text_is_no_passage_when_the_request_retrieved(tracing: InMemoryTracing) -> None:
    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role="assistant", content="Boxes.")
        return ChatMessage(role="assistant", blocks=[
            ToolCallBlock(tool_call_id="a", tool_name="search_kb", tool_kwargs={"query": Q}),
            ToolCallBlock(tool_call_id="b", tool_name="web_search", tool_kwargs={"query": Q})])

    llm = MockFunctionCallingLLM(response_generator=reply, is_chat_model=True)
    llamaindex.instrument(tracing.provider)
    arun(lambda: FunctionAgent(tools=[search_kb, web_search], llm=llm).run(user_msg=Q))

    _, record = request(tracing.spans())
    assert contents(record) == about(Q)
    assert len(by_kind(tracing.spans(), sc.KIND_TOOL)) == 2
