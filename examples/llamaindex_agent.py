"""A LlamaIndex ``FunctionAgent`` with a ``QueryEngineTool``, traced and scored offline:
one root span per question (the agent's run) carrying the question, the passages its
tool retrieved and the agent's final answer, with a TOOL span for the tool call.

    pip install -e '.[llamaindex,local]'   # in a clone of this repository
    python examples/llamaindex_agent.py

llama-index-core's ``MockFunctionCallingLLM`` plays the agent's model (it calls the
tool once, then answers with what the tool found); the tool's engine uses the
extractive stand-in of ``_llamaindex_offline.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from _llamaindex_offline import ExtractiveLLM, build_index, print_scores
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import QueryEngineTool
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.collectors import llamaindex


def agent_reply(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    """Look the question up once, then answer with the tool's result."""
    results = [m.content for m in messages if m.role == MessageRole.TOOL]
    if results:
        return ChatMessage(role="assistant", content=results[-1])
    question = next(m.content for m in reversed(messages) if m.role == MessageRole.USER)
    return ChatMessage(role="assistant", blocks=[ToolCallBlock(
        tool_call_id="call-1", tool_name="pets_kb", tool_kwargs={"input": question})])


async def ask(agent: FunctionAgent, question: str) -> str:
    return str(await agent.run(user_msg=question))


def main() -> None:
    spans = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="pets-agent", exporter=spans, judge="local")
    llamaindex.instrument(rt.tracer_provider)

    index = build_index()
    tool = QueryEngineTool.from_defaults(
        index.as_query_engine(llm=ExtractiveLLM(), similarity_top_k=1), name="pets_kb",
        description="Answers questions about pets.")
    agent = FunctionAgent(tools=[tool], llm=MockFunctionCallingLLM(
        response_generator=agent_reply, is_chat_model=True))
    print("answer:", asyncio.run(ask(agent, "Why do cats like boxes?")))

    rt.force_flush(timeout_s=15)
    print_scores(spans)
    tools = [s.name for s in spans.get_finished_spans()
             if (s.attributes or {}).get("openinference.span.kind") == "TOOL"]
    print("tool spans:", tools)
    llamaindex.uninstrument()
    rt.shutdown()


if __name__ == "__main__":
    main()
