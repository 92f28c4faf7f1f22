"""LlamaIndex agents and workflows for the collector's tests, on llama-index-core's own
fake function-calling model (``MockFunctionCallingLLM``, driven by a scripted reply
function) and the query engines of ``llamaindex_fakes``: no network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from llama_index.core import get_response_synthesizer
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.schema import NodeWithScore
from llama_index.core.tools import QueryEngineTool
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step
from llamaindex_fakes import ScriptedLLM, echo_engine, index

TOOL_NAME = "knowledge_base"
T = TypeVar("T")


def arun(make: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run`` for a workflow's ``run()``, which needs a running loop to start."""

    async def main() -> T:
        return await make()

    return asyncio.run(main())


def answer_for(question: str) -> str:
    return f"Final answer about {question}."


def _question(messages: Sequence[ChatMessage]) -> str:
    return next(m.content or "" for m in reversed(messages) if m.role == MessageRole.USER
                and not (m.content or "").startswith("Observation:"))


def tool_calling_llm(lookups: int = 1) -> MockFunctionCallingLLM:
    """Asks the tool ``lookups`` times in one turn (``"<question> #i"``), then answers
    from the tool results; the texts name the question, so a test can tell requests
    apart."""

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        question = _question(messages)
        if any(m.role == MessageRole.TOOL for m in messages):
            return ChatMessage(role="assistant", content=answer_for(question))
        return ChatMessage(role="assistant", blocks=[
            ToolCallBlock(tool_call_id=f"call-{i}", tool_name=TOOL_NAME,
                          tool_kwargs={"input": f"{question} #{i}"})
            for i in range(lookups)])

    return MockFunctionCallingLLM(response_generator=reply, is_chat_model=True)


def react_llm() -> MockFunctionCallingLLM:
    """Replies in ReAct's text format: one action, then the answer."""

    def reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        question = _question(messages)
        if any((m.content or "").startswith("Observation:") for m in messages):
            return ChatMessage(role="assistant", content=(
                "Thought: I can answer without using any more tools.\n"
                f"Answer: {answer_for(question)}"))
        return ChatMessage(role="assistant", content=(
            "Thought: I need to look this up.\n"
            f"Action: {TOOL_NAME}\nAction Input: {json.dumps({'input': f'{question} #0'})}"))

    return MockFunctionCallingLLM(response_generator=reply, is_chat_model=True)


class RetrieverEvent(Event):
    nodes: list[NodeWithScore]


class RAGWorkflow(Workflow):
    """Retrieve with the index's retriever, synthesize with a response synthesizer."""

    def __init__(self, streaming: bool = False, result: str = "response",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index()
        self.streaming = streaming
        self.result = result

    @step
    async def retrieve(self, ctx: Context, ev: StartEvent) -> RetrieverEvent | None:
        query = ev.get("query")
        if not query:
            return None
        await ctx.store.set("query", query)
        nodes = await self.index.as_retriever(similarity_top_k=2).aretrieve(query)
        return RetrieverEvent(nodes=nodes)

    @step
    async def synthesize(self, ctx: Context, ev: RetrieverEvent) -> StopEvent:
        query = await ctx.store.get("query")
        synthesizer = get_response_synthesizer(llm=ScriptedLLM(), streaming=self.streaming)
        response = await synthesizer.asynthesize(query, nodes=ev.nodes)
        if self.result == "str":
            return StopEvent(result=str(response))
        if self.result == "dict":
            return StopEvent(result={"answer": str(response), "sources": ev.nodes})
        return StopEvent(result=response)


def kb_tool() -> QueryEngineTool:
    """A whole query engine (``EchoRetriever`` + ``MockLLM``) as the agent's tool."""
    return QueryEngineTool.from_defaults(echo_engine(), name=TOOL_NAME,
                                         description="Answers questions about pets.")


def function_agent(lookups: int = 1, streaming: bool = True) -> FunctionAgent:
    return FunctionAgent(tools=[kb_tool()], llm=tool_calling_llm(lookups), streaming=streaming)


def react_agent() -> ReActAgent:
    return ReActAgent(tools=[kb_tool()], llm=react_llm())


def passages_for(question: str, lookups: int = 1) -> set[str]:
    """What ``EchoRetriever`` returns for the tool queries of ``question``."""
    return {f"passage about {question} #{i}" for i in range(lookups)}


__all__ = [
    "TOOL_NAME",
    "RAGWorkflow",
    "RetrieverEvent",
    "answer_for",
    "arun",
    "function_agent",
    "kb_tool",
    "passages_for",
    "react_agent",
    "react_llm",
    "tool_calling_llm",
]
