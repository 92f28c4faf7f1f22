"""One handler shared by concurrent requests: every span lands in its own request's trace."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from langchain_fakes import rag_chain, tracing_fixture  # noqa: F401 (fixture by name)
from span_checks import one

from ragas_trace import extract_record
from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing


def questions(n: int) -> list[str]:
    return [f"Question number {i}?" for i in range(n)]


def assert_one_trace_per_question(tracing: InMemoryTracing, asked: list[str],
                                  handler: RagasCallbackHandler) -> None:
    traces = tracing.by_trace()
    assert len(traces) == len(asked)
    seen = []
    for spans in traces.values():
        assert len(spans) == 3
        root = one(spans, sc.KIND_CHAIN)
        retriever = one(spans, sc.KIND_RETRIEVER)
        llm = one(spans, sc.KIND_LLM)
        question = root.attributes[sc.INPUT_VALUE]
        assert retriever.attributes[sc.INPUT_VALUE] == question
        assert retriever.parent.span_id == llm.parent.span_id == root.context.span_id
        record = extract_record(spans)
        assert record is not None and record.question == question
        assert [c.content for c in record.contexts] == [
            f"Passage one about {question}.", f"Passage two about {question}."]
        assert record.answer is not None and question in record.answer
        seen.append(question)
    assert sorted(seen) == sorted(asked)
    assert handler.open_runs == 0


def test_many_threads_share_one_handler(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain()
    asked = questions(200)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda q: chain.invoke(q, config={"callbacks": [handler]}),
                                asked))

    assert all(q in a for q, a in zip(asked, answers, strict=True))
    assert_one_trace_per_question(tracing, asked, handler)


async def test_ainvoke_under_gather(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain()
    asked = questions(20)
    await asyncio.gather(*(chain.ainvoke(q, config={"callbacks": [handler]}) for q in asked))

    assert_one_trace_per_question(tracing, asked, handler)


def test_batch(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    asked = questions(16)
    rag_chain().batch(asked, config={"callbacks": [handler], "max_concurrency": 4})

    assert_one_trace_per_question(tracing, asked, handler)


async def test_abatch(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    asked = questions(16)
    await rag_chain().abatch(asked, config={"callbacks": [handler]})

    assert_one_trace_per_question(tracing, asked, handler)


def test_stream_from_many_threads(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain()
    asked = questions(40)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda q: "".join(chain.stream(q, config={"callbacks": [handler]})),
                      asked))

    assert_one_trace_per_question(tracing, asked, handler)
    assert all(s.attributes.get(sc.RAGAS_STREAM_STATUS) == "completed"
               for s in tracing.spans() if s.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN)


async def test_astream_under_gather(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain()
    asked = questions(20)

    async def consume(question: str) -> str:
        return "".join([c async for c in chain.astream(question,
                                                        config={"callbacks": [handler]})])

    await asyncio.gather(*(consume(q) for q in asked))

    assert_one_trace_per_question(tracing, asked, handler)


async def test_ainvoke_parents_each_request_to_its_own_task_span(
        tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    chain = rag_chain()

    async def request(question: str) -> int:
        with tracing.tracer.start_as_current_span(f"POST {question}") as server:
            await asyncio.sleep(0)
            await chain.ainvoke(question, config={"callbacks": [handler]})
            return server.get_span_context().span_id

    asked = questions(10)
    server_ids = await asyncio.gather(*(request(q) for q in asked))

    roots = {s.attributes[sc.INPUT_VALUE]: s for s in tracing.spans()
             if s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN}
    for question, server_id in zip(asked, server_ids, strict=True):
        assert roots[question].parent.span_id == server_id
