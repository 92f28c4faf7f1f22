"""Streaming, abandoned streams, and runs that never end."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from langchain_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    QUESTION,
    rag_chain,
    tracing_fixture,
)
from opentelemetry.trace import StatusCode
from span_checks import one

from ragas_trace import extract_record
from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing


def test_stream_takes_the_question_from_the_end_event(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chunks = list(rag_chain().stream(QUESTION, config={"callbacks": [handler]}))

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == "".join(chunks)
    assert root.attributes[sc.OUTPUT_VALUE].strip() == ANSWER
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "completed"
    record = extract_record(tracing.spans())
    assert record is not None and record.question == QUESTION and len(record.contexts) == 2
    assert handler.open_runs == 0


async def test_astream_takes_the_question_from_the_end_event(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chunks = [c async for c in rag_chain().astream(QUESTION, config={"callbacks": [handler]})]

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == "".join(chunks)
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "completed"
    assert handler.open_runs == 0


def test_sync_stream_stopped_early_is_recorded_as_abandoned(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    stream = rag_chain().stream(QUESTION, config={"callbacks": [handler]})
    first = next(iter(stream))
    stream.close()

    assert first
    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.end_time is not None
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "abandoned"
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.status.status_code != StatusCode.ERROR
    # The model run may end after the root: its span still joins the request's trace.
    for _ in range(500):
        if handler.open_runs == 0:
            break
        time.sleep(0.01)
    llm = one(tracing.spans(), sc.KIND_LLM)
    assert llm.parent.span_id == root.context.span_id


async def test_astream_stopped_early_is_recorded_as_abandoned(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    stream = rag_chain().astream(QUESTION, config={"callbacks": [handler]})
    async for _ in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    # LangChain delivers the GeneratorExit to the runs from tasks that finish later.
    for _ in range(500):
        if len(tracing.spans()) == 3:
            break
        await asyncio.sleep(0.01)

    root = one(tracing.spans(), sc.KIND_CHAIN)
    llm = one(tracing.spans(), sc.KIND_LLM)
    for span in (root, llm):
        assert span.attributes[sc.RAGAS_STREAM_STATUS] == "abandoned"
        # The consumer stopped: not an application error, no exception event.
        assert span.status.status_code != StatusCode.ERROR
        assert span.events == ()
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert handler.open_runs == 0


def _start_request_that_never_ends(handler: RagasCallbackHandler) -> uuid.UUID:
    root, child = uuid.uuid4(), uuid.uuid4()
    handler.on_chain_start(None, QUESTION, run_id=root, name="Leaky")
    handler.on_retriever_start(None, QUESTION, run_id=child, parent_run_id=root, name="R")
    return root


def test_runs_that_never_end_are_evicted_after_the_ttl(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider, run_ttl_s=0.05)
    leaky = _start_request_that_never_ends(handler)
    assert handler.open_runs == 2
    time.sleep(0.1)

    rag_chain().invoke(QUESTION, config={"callbacks": [handler]})

    evicted = [s for s in tracing.spans() if s.attributes.get(sc.RAGAS_RUN_EVICTED)]
    assert sorted(s.name for s in evicted) == ["Leaky", "R"]
    for span in evicted:
        assert span.status.status_code == StatusCode.ERROR
        assert "evicted" in (span.status.description or "")
    assert handler.evicted_runs == 2
    assert handler.open_runs == 0
    # A late end event for an evicted run is ignored.
    handler.on_chain_end("late", run_id=leaky)
    assert len(tracing.spans()) == 5


def test_open_runs_stay_bounded_by_max_open_runs(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider, max_open_runs=50)
    for _ in range(500):
        _start_request_that_never_ends(handler)

    assert handler.open_runs <= 52
    assert handler.evicted_runs >= 900
    rag_chain().invoke(QUESTION, config={"callbacks": [handler]})
    assert extract_record(tracing.spans()) is not None


def test_run_left_open_after_its_root_ended_is_evicted_later(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider, run_ttl_s=0.05)
    root, llm = uuid.uuid4(), uuid.uuid4()
    handler.on_chain_start(None, QUESTION, run_id=root, name="Stream")
    handler.on_chat_model_start(None, [], run_id=llm, parent_run_id=root, name="Model")
    handler.on_chain_end(None, run_id=root)

    chain_span = one(tracing.spans(), sc.KIND_CHAIN)
    assert chain_span.attributes[sc.RAGAS_STREAM_STATUS] == "abandoned"
    assert handler.open_runs == 1
    time.sleep(0.1)
    rag_chain().invoke(QUESTION, config={"callbacks": [handler]})

    model = next(s for s in tracing.spans() if s.name == "Model")
    assert model.attributes[sc.RAGAS_RUN_EVICTED] is True
    assert model.parent.span_id == chain_span.context.span_id
    assert handler.open_runs == 0


def test_run_evicted_while_its_request_is_open_is_ended_with_the_request(
        tracing: InMemoryTracing, caplog: pytest.LogCaptureFixture) -> None:
    handler = RagasCallbackHandler(tracing.provider, max_open_runs=3)
    root = uuid.uuid4()
    retrievers = [uuid.uuid4() for _ in range(3)]
    handler.on_chain_start(None, QUESTION, run_id=root, name="Busy")
    for run_id in retrievers:
        handler.on_retriever_start(None, QUESTION, run_id=run_id, parent_run_id=root, name="R")
    handler.on_chain_start(None, "another request", run_id=uuid.uuid4(), name="Other")
    assert handler.evicted_runs >= 1

    # The oldest runs went first: the root itself, so its request was ended with them.
    busy = [s for s in tracing.spans() if s.name in ("Busy", "R")]
    assert {s.name for s in busy} == {"Busy", "R"}
    assert all(s.attributes.get(sc.RAGAS_RUN_EVICTED) for s in busy)
    assert all(s.end_time is not None for s in busy)
    # Their late end events change nothing: each span is ended once.
    for run_id in retrievers:
        handler.on_retriever_end([], run_id=run_id)
    handler.on_chain_end("late", run_id=root)
    assert len([s for s in tracing.spans() if s.name in ("Busy", "R")]) == 4
    assert "ended span" not in caplog.text
