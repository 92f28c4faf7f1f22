"""Many requests through one instrumented process: every retrieval and LLM call lands
in its own request's trace, with threads and with ``aquery`` under ``asyncio.gather``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from llamaindex_fakes import echo_engine, tracing_fixture  # noqa: F401
from opentelemetry.sdk.trace import ReadableSpan
from span_checks import kinds, one

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing


def _assert_each_trace_is_its_own_request(traces: dict[int, list[ReadableSpan]],
                                          questions: Sequence[str]) -> None:
    assert len(traces) == len(questions)
    seen = []
    for spans in traces.values():
        assert kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
        record = extract_record(spans)
        assert record is not None and record.question is not None
        # EchoRetriever names the query in each passage: a retrieval that landed in
        # another request's trace would show that request's question.
        assert record.context_texts == [f"passage about {record.question}"] * 2
        root = one(spans, sc.KIND_CHAIN)
        assert all(s.parent.span_id == root.context.span_id for s in spans if s is not root)
        seen.append(record.question)
    assert sorted(seen) == sorted(questions)


def test_threads(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)
    engine = echo_engine()
    questions = [f"thread question {i}?" for i in range(160)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda q: str(engine.query(q)), questions))

    assert all(answers)
    _assert_each_trace_is_its_own_request(tracing.by_trace(), questions)
    assert installation.open_runs == 0
    assert installation.tracker.open_spans == 0


async def test_aquery_under_gather(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)
    engine = echo_engine()
    questions = [f"async question {i}?" for i in range(40)]

    answers = await asyncio.gather(*(engine.aquery(q) for q in questions))

    assert all(str(a) for a in answers)
    _assert_each_trace_is_its_own_request(tracing.by_trace(), questions)
    assert installation.open_runs == 0
    assert installation.tracker.open_spans == 0


def test_streams_in_threads(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = echo_engine(streaming=True)
    questions = [f"stream question {i}?" for i in range(40)]

    def ask(q: str) -> str:
        return "".join(engine.query(q).response_gen)

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(ask, questions))

    assert all(answers)
    _assert_each_trace_is_its_own_request(tracing.by_trace(), questions)
