"""Agents and graphs however they are called: every ``stream_mode`` (and lists of
them), ``astream``, ``ainvoke``, ``batch``, ``abatch``; and with many requests at
once, each trace keeps its own passages."""

from __future__ import annotations

import asyncio
from typing import Any

import agent_fakes as apps
import pytest
from langchain_fakes import tracing_fixture  # noqa: F401 (the fixture is used by name)
from test_langchain_agents import one_request, passages

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing

MODES: list[Any] = ["values", "updates", "messages", "debug", "custom",
                    ["values", "updates"], ["messages", "custom", "updates"]]


def check(tracing: InMemoryTracing, handler: RagasCallbackHandler, question: str) -> None:
    root, record = one_request(tracing.spans())
    assert record.question == question
    assert record.answer == f"Answer: {passages(record)[0]}"
    assert question.split()[2] in passages(record)[0]
    assert root.attributes.get(sc.RAGAS_STREAM_STATUS) != sc.STREAM_ABANDONED
    assert handler.open_runs == 0


@pytest.mark.parametrize("mode", MODES, ids=str)
def test_stream_every_mode(tracing: InMemoryTracing, mode: Any) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chunks = list(apps.rag_agent().stream(apps.messages_input(), {"callbacks": [handler]},
                                          stream_mode=mode))
    assert chunks
    check(tracing, handler, apps.QUESTION)


@pytest.mark.parametrize("mode", ["values", "updates", "messages", ["updates", "custom"]],
                         ids=str)
async def test_astream(tracing: InMemoryTracing, mode: Any) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chunks = [c async for c in apps.agentic_rag().astream(
        apps.messages_input(), {"callbacks": [handler]}, stream_mode=mode)]
    assert chunks
    check(tracing, handler, apps.QUESTION)


def test_state_graph_stream_updates(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    updates = list(apps.state_graph().stream({"question": apps.QUESTION},
                                             {"callbacks": [handler]}, stream_mode="updates"))
    assert [next(iter(u)) for u in updates] == ["retrieve", "generate"]
    check(tracing, handler, apps.QUESTION)


async def test_ainvoke(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    await apps.dynamic_prompt_agent().ainvoke(apps.messages_input(), {"callbacks": [handler]})
    check(tracing, handler, apps.QUESTION)


def assert_one_trace_each(tracing: InMemoryTracing, asked: list[str],
                          handler: RagasCallbackHandler) -> None:
    traces = tracing.by_trace()
    assert len(traces) == len(asked)
    seen = []
    for spans in traces.values():
        _, record = one_request(spans)
        assert record.question is not None
        city = record.question.split()[2]
        assert passages(record)[0] == f"{city} lies on river{city[4:]}, in region{city[4:]}."
        assert record.answer == f"Answer: {passages(record)[0]}"
        seen.append(record.question)
    assert sorted(seen) == sorted(asked)
    assert handler.open_runs == 0


ASKED = [apps.question(i) for i in range(20)]


def test_batch(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    apps.rag_agent().batch([apps.messages_input(q) for q in ASKED], {"callbacks": [handler]},
                           max_concurrency=8)
    assert_one_trace_each(tracing, ASKED, handler)


async def test_abatch_20_agent_requests(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    await apps.rag_agent(use_retriever=True).abatch(
        [apps.messages_input(q) for q in ASKED], {"callbacks": [handler]})
    assert_one_trace_each(tracing, ASKED, handler)


async def test_gather_20_agent_requests(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    agent = apps.rag_agent()
    await asyncio.gather(*(agent.ainvoke(apps.messages_input(q), {"callbacks": [handler]})
                           for q in ASKED))
    assert_one_trace_each(tracing, ASKED, handler)


async def test_gather_20_graph_requests(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    graph = apps.state_graph()
    await asyncio.gather(*(graph.ainvoke({"question": q}, {"callbacks": [handler]})
                           for q in ASKED))
    assert_one_trace_each(tracing, ASKED, handler)


def test_a_stream_stopped_early_is_marked_abandoned(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    stream = apps.rag_agent().stream(apps.messages_input(), {"callbacks": [handler]},
                                     stream_mode="updates")
    next(stream)
    stream.close()

    root = next(s for s in tracing.spans() if s.parent is None)
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == sc.STREAM_ABANDONED
    assert handler.open_runs == 0


async def test_an_astream_stopped_early_is_marked_abandoned(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    stream = apps.rag_agent().astream(apps.messages_input(), {"callbacks": [handler]},
                                      stream_mode="messages")
    async for _ in stream:
        break
    await stream.aclose()

    root = next(s for s in tracing.spans() if s.parent is None)
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == sc.STREAM_ABANDONED
    assert handler.open_runs == 0
