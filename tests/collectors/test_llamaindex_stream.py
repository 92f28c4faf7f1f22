"""Streaming through the LlamaIndex collector: the answer is recorded when the user's
stream ends, the lazily run LLM stays in the request's trace, the user's stream is
left untouched, and a stream that stops early or fails says so."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core.memory import Memory
from llamaindex_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    QUESTION,
    TOKENS,
    MockLLM,
    ScriptedLLM,
    index,
    memories_fixture,
    tracing_fixture,
)
from opentelemetry.trace import StatusCode
from span_checks import kinds, one

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing


def _engine(llm: Any = None) -> Any:
    return index().as_query_engine(llm=llm or ScriptedLLM(), similarity_top_k=2,
                                   streaming=True)


def _assert_one_request(tracing: InMemoryTracing, answer: str | None, status: str) -> None:
    spans = tracing.spans()
    assert kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
    root = one(spans, sc.KIND_CHAIN)
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    llm = one(spans, sc.KIND_LLM)
    assert llm.parent is not None and llm.parent.span_id == root.context.span_id
    assert llm.end_time <= root.end_time
    assert root.attributes.get(sc.OUTPUT_VALUE) == answer
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == status


def test_stream_answer_is_recorded_when_the_user_finishes(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = _engine().query(QUESTION)

    # The request is still open until the user reads the stream (the LLM has not even
    # run): its spans are made when it ends.
    assert tracing.spans() == ()

    tokens = list(response.response_gen)

    assert tokens == list(TOKENS)
    _assert_one_request(tracing, ANSWER, "completed")
    llm = one(tracing.spans(), sc.KIND_LLM)
    # Usage came with the streamed call's end event.
    assert llm.attributes[sc.LLM_TOKEN_COUNT_PROMPT] == 12
    assert llm.attributes[sc.LLM_TOKEN_COUNT_COMPLETION] == 5
    record = extract_record(tracing.spans())
    assert record is not None and (record.question, record.answer) == (QUESTION, ANSWER)
    assert len(record.contexts) == 2


def test_stream_helpers_that_consume_for_the_user_work(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = _engine().query(QUESTION)

    assert str(response) == ANSWER
    assert response.get_response().response == ANSWER
    _assert_one_request(tracing, ANSWER, "completed")


def test_stream_consumed_in_another_thread_stays_in_the_trace(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = _engine().query(QUESTION)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(response.response_gen))
    reader.start()
    reader.join(timeout=10)

    assert "".join(out) == ANSWER
    _assert_one_request(tracing, ANSWER, "completed")


def test_stream_is_not_consumed_or_copied_for_the_user(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = _engine().query(QUESTION)

    assert response.response_txt is None
    assert next(response.response_gen) == TOKENS[0]
    assert response.response_txt is None
    rest = list(response.response_gen)
    assert rest == list(TOKENS[1:])


def test_abandoned_stream_records_its_status_and_partial_answer(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = _engine().query(QUESTION)
    stream = response.response_gen
    assert next(stream) == TOKENS[0]

    stream.close()

    _assert_one_request(tracing, TOKENS[0], "abandoned")
    assert one(tracing.spans(), sc.KIND_CHAIN).status.status_code == StatusCode.UNSET


def test_stream_failure_reaches_the_user_and_marks_the_root(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = _engine(ScriptedLLM(fail_after=2)).query(QUESTION)
    seen: list[str] = []

    with pytest.raises(RuntimeError, match="model connection lost"):
        for token in response.response_gen:
            seen.append(token)

    assert seen == list(TOKENS[:2])
    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "error"
    assert root.status.status_code == StatusCode.ERROR
    assert "model connection lost" in (root.status.description or "")


async def test_async_stream_answer_and_llm_span_in_the_trace(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = await _engine().aquery(QUESTION)

    tokens = [t async for t in response.async_response_gen()]

    assert "".join(tokens) == ANSWER
    _assert_one_request(tracing, ANSWER, "completed")
    assert one(tracing.spans(), sc.KIND_CHAIN).name == "RetrieverQueryEngine.aquery"


async def test_async_stream_with_nested_lazy_llm_call_gives_one_llm_span(
        tracing: InMemoryTracing) -> None:
    # MockLLM's astream_complete runs stream_complete lazily, as a parentless span.
    llamaindex.instrument(tracing.provider)
    response = await _engine(MockLLM(max_tokens=3)).aquery(QUESTION)

    answer = "".join([t async for t in response.async_response_gen()])

    assert answer == "text text text"
    _assert_one_request(tracing, answer, "completed")


async def test_abandoned_async_stream_records_its_status(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = await _engine().aquery(QUESTION)
    stream = response.response_gen
    assert await stream.__anext__() == TOKENS[0]

    await stream.aclose()

    _assert_one_request(tracing, TOKENS[0], "abandoned")


async def test_concurrent_async_streams_each_keep_their_llm_span(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = _engine()
    questions = [f"question {i}?" for i in range(8)]

    async def ask(q: str) -> str:
        response = await engine.aquery(q)
        return "".join([t async for t in response.async_response_gen()])

    answers = await asyncio.gather(*(ask(q) for q in questions))

    assert answers == [ANSWER] * len(questions)
    traces = tracing.by_trace()
    assert len(traces) == len(questions)
    for spans in traces.values():
        assert kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
        root = one(spans, sc.KIND_CHAIN)
        assert one(spans, sc.KIND_LLM).parent.span_id == root.context.span_id
    assert sorted(one(s, sc.KIND_CHAIN).attributes[sc.INPUT_VALUE]
                  for s in traces.values()) == sorted(questions)


@pytest.mark.parametrize("mode", ["condense_plus_context", "context"])
def test_stream_chat_records_the_answer_in_the_trace(
        tracing: InMemoryTracing, memories: Callable[..., Memory], mode: str) -> None:
    llamaindex.instrument(tracing.provider)
    engine = index().as_chat_engine(chat_mode=mode, llm=ScriptedLLM(), similarity_top_k=2,
                                    memory=memories())

    response = engine.stream_chat(QUESTION)
    tokens = list(response.response_gen)

    assert "".join(tokens) == ANSWER
    spans = tracing.spans()
    root = one(spans, sc.KIND_CHAIN)
    assert root.name.endswith(".stream_chat")
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER.strip()
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "completed"
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    assert one(spans, sc.KIND_LLM).parent.span_id == root.context.span_id
    assert one(spans, sc.KIND_RETRIEVER).parent.span_id == root.context.span_id


async def test_astream_chat_records_the_answer_in_the_trace(
        tracing: InMemoryTracing, memories: Callable[..., Memory]) -> None:
    llamaindex.instrument(tracing.provider)
    engine = index().as_chat_engine(chat_mode="condense_plus_context", llm=ScriptedLLM(),
                                    memory=memories())

    response = await engine.astream_chat(QUESTION)
    tokens = [t async for t in response.async_response_gen()]

    assert "".join(tokens) == ANSWER
    record = extract_record(tracing.spans())
    assert record is not None
    assert (record.question, record.answer) == (QUESTION, ANSWER.strip())
    assert record.attributes[sc.RAGAS_STREAM_STATUS] == "completed"
    assert len(record.contexts) == 2
    assert kinds(tracing.spans()) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]


def test_stream_dropped_unread_ends_as_abandoned(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)
    response = _engine().query(QUESTION)
    assert installation.open_runs == 1

    del response
    gc.collect()

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "abandoned"
    assert sc.OUTPUT_VALUE not in root.attributes
    assert installation.open_runs == 0
    assert installation.tracker.open_spans == 0


def test_chat_stream_whose_writer_finishes_before_the_call_returns(
        tracing: InMemoryTracing, memories: Callable[..., Memory],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Force the race's other order: LlamaIndex's writer thread runs to its end inside
    # stream_chat, before the engine call returns.
    from llama_index.core.chat_engine import context as context_engine

    class InlineThread(threading.Thread):
        def start(self) -> None:
            self.run()

        def join(self, timeout: float | None = None) -> None:
            return None

    monkeypatch.setattr(context_engine, "Thread", InlineThread)
    llamaindex.instrument(tracing.provider)
    engine = index().as_chat_engine(chat_mode="context", llm=ScriptedLLM(), memory=memories())

    response = engine.stream_chat(QUESTION)
    assert "".join(response.response_gen) == ANSWER

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER.strip()
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "completed"
    assert kinds(tracing.spans()) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
