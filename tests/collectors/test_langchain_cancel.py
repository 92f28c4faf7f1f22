"""Cancelled requests: langchain-core sends no end or error event to a model,
retriever or tool run whose task is cancelled. The handler ends the request at once
(spans closed, status ``cancelled``) and forgets its runs."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langchain_fakes import (  # noqa: F401 (the fixture is used by name)
    QUESTION,
    EchoChatModel,
    rag_chain,
    tracing_fixture,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.collectors.langchain._runs import Run
from ragas_trace.exporters.processor import ScoringSpanProcessor
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.rag_spans import evaluation_status
from ragas_trace.testing.scripted_judge import ScriptedJudge


class SlowModel(EchoChatModel):
    """Answers after ``delay_s`` (async), streams a word every ``delay_s``; sets
    ``entered`` when a call starts."""

    delay_s: float = 10.0
    entered: Any = None

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if self.entered is not None:
            self.entered.set()
        await asyncio.sleep(self.delay_s)
        return self._generate(messages)

    async def _astream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                       run_manager: Any = None,
                       **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
        for word in self._answer(messages).split(" "):
            await asyncio.sleep(self.delay_s)
            yield ChatGenerationChunk(message=AIMessageChunk(content=word + " "))


async def cancelled(awaitable: Any, after_s: float) -> bool:
    """Run ``awaitable`` for ``after_s``, cancel it if still running; whether it ended
    cancelled. Not ``asyncio.wait_for``: on Python 3.11 it can report a timeout for a
    request that finished as the timeout fired (CI saw 299 timeouts for 297 cancelled
    requests)."""
    task = asyncio.ensure_future(awaitable)
    await asyncio.wait({task}, timeout=after_s)
    task.cancel()  # a no-op once it is done
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return task.cancelled()


def roots(tracing: InMemoryTracing) -> list[Any]:
    return [s for s in tracing.spans() if s.parent is None]


async def test_900_ainvokes_cancelled_in_the_model_leave_no_open_run(
        tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    entered = asyncio.Event()
    chain = rag_chain(model=SlowModel(entered=entered))
    config = {"callbacks": [handler]}
    for _ in range(900):
        entered.clear()
        request = asyncio.create_task(chain.ainvoke(QUESTION, config=config))
        await entered.wait()
        request.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await request
        assert handler.open_runs == 0
    spans = tracing.spans()
    assert len(roots(tracing)) == 900
    for kind in (sc.KIND_CHAIN, sc.KIND_LLM):
        closed = [s for s in spans if s.attributes.get(sc.SPAN_KIND) == kind]
        assert len(closed) == 900
        assert all(s.status.status_code is StatusCode.ERROR
                   and s.status.description == "cancelled"
                   and s.attributes[sc.RAGAS_RUN_CANCELLED] is True for s in closed)
    # The model was cancelled, not abandoned by a stream consumer.
    assert not any(sc.RAGAS_STREAM_STATUS in s.attributes for s in spans)


async def test_cancelled_at_random_points_leave_no_open_run(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain(model=SlowModel(delay_s=0.002))
    config = {"callbacks": [handler]}
    draw = random.Random(24)
    outcomes = []
    for _ in range(300):
        before = len(roots(tracing))
        was_cancelled = await cancelled(chain.ainvoke(QUESTION, config=config),
                                        draw.uniform(0, 0.004))
        (root,) = roots(tracing)[before:]
        outcomes.append((was_cancelled, root))
    assert handler.open_runs == 0
    for was_cancelled, root in outcomes:
        if root.status.description == "cancelled":
            assert was_cancelled and sc.OUTPUT_VALUE not in root.attributes
        else:
            # Not cancelled, or cancelled after the chain had ended (its callbacks
            # said so, its answer was made): a completed run, as the framework saw it.
            assert root.status.status_code is not StatusCode.ERROR
            assert sc.OUTPUT_VALUE in root.attributes, root.attributes
    assert sum(root.status.description == "cancelled" for _, root in outcomes) > 100


async def test_cancelled_astream_consumer_leaves_no_open_run(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain(model=SlowModel(delay_s=0.01))

    async def consume(first: asyncio.Event) -> None:
        async for _ in chain.astream(QUESTION, config={"callbacks": [handler]}):
            first.set()

    for _ in range(20):
        first = asyncio.Event()
        consumer = asyncio.create_task(consume(first))
        await first.wait()  # the model is streaming
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
    assert handler.open_runs == 0
    assert len(roots(tracing)) == 20
    assert {s.status.description for s in roots(tracing)} == {"cancelled"}


async def test_cancelled_tool_and_model_calls_end_their_requests(
        tracing: InMemoryTracing) -> None:
    # Called on their own they are the request's root, and no event at all reaches
    # the handler: the task's cancellation ends them.
    @tool
    async def lookup(query: str) -> str:
        """Look the query up."""
        await asyncio.sleep(10)
        return query

    handler = RagasCallbackHandler(tracing.provider)
    config = {"callbacks": [handler]}
    for _ in range(10):
        assert await cancelled(lookup.ainvoke({"query": QUESTION}, config=config), 0.005)
        assert await cancelled(SlowModel().ainvoke(QUESTION, config=config), 0.005)
    assert handler.open_runs == 0
    found = roots(tracing)
    assert sorted(s.attributes[sc.SPAN_KIND] for s in found) == [sc.KIND_LLM] * 10 + [
        sc.KIND_TOOL] * 10
    assert {s.status.description for s in found} == {"cancelled"}


async def test_requests_that_end_do_not_stay_on_their_task() -> None:
    # One long-lived task making many requests: the watch on it is removed when each
    # request ends, so its runs are freed then, not when the task ends.
    tracing = InMemoryTracing()
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain()
    for _ in range(50):
        await chain.ainvoke(QUESTION, config={"callbacks": [handler]})
    tracing.shutdown()
    gc.collect()
    assert handler.open_runs == 0
    assert not any(isinstance(o, Run) for o in gc.get_objects())


@pytest.fixture
def scoring() -> Any:
    exporter = InMemorySpanExporter()
    processor = ScoringSpanProcessor(SimpleSpanProcessor(exporter), BackgroundScorer(
        ScriptedJudge(), concurrency=1, queue_size=10, timeout_s=5.0))
    provider = TracerProvider()
    provider.add_span_processor(processor)
    yield provider, exporter
    processor.shutdown(2.0)


async def test_a_cancelled_root_is_exported_unscorable_as_cancelled(scoring: Any) -> None:
    provider, exporter = scoring
    handler = RagasCallbackHandler(provider)
    assert await cancelled(rag_chain(model=SlowModel()).ainvoke(
        QUESTION, config={"callbacks": [handler]}), 0.005)
    root = next(s for s in exporter.get_finished_spans() if s.parent is None)
    assert evaluation_status(root) == "unscorable"
    assert root.attributes[sc.RAGAS_EVALUATION_REASON] == "cancelled"
