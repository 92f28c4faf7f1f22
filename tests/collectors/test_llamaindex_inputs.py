"""Bad input, odd shapes and our own failures: always a valid trace, never an exception
in the user's code; plus what limits capture (scope, suppression) and memory."""

from __future__ import annotations

import logging
from typing import ClassVar

import pytest
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.instrumentation.dispatcher import instrument_tags
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import TextNode
from llamaindex_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    QUESTION,
    MockLLM,
    ScriptedLLM,
    echo_engine,
    index,
    tracing_fixture,
)
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import StatusCode
from span_checks import kinds, one

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import internal_error_counts, reset_internal_error_counts
from ragas_trace.collectors import _attributes, llamaindex
from ragas_trace.collectors.llamaindex import _values
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing


class NoAnswerEngine(CustomQueryEngine):
    def custom_query(self, query_str: str) -> Response:
        return Response(response=None)


class RetrieveOnlyEngine(CustomQueryEngine):
    """Answers with the passages' count: no LLM context window to overflow."""

    retriever: BaseRetriever

    def custom_query(self, query_str: str) -> Response:
        found = self.retriever.retrieve(query_str)
        return Response(response=f"{len(found)} passages", source_nodes=found)


def test_empty_retrieval_gives_a_valid_trace(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = index([]).as_query_engine(llm=ScriptedLLM()).query(QUESTION)

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert retriever.attributes["ragas.retrieval.documents_total"] == 0
    assert sc.document_key(0, sc.DOCUMENT_CONTENT) not in retriever.attributes
    record = extract_record(tracing.spans())
    assert record is not None
    assert record.contexts == ()
    assert record.answer == response.response


def test_none_response_gives_a_root_without_answer(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    response = NoAnswerEngine().query(QUESTION)

    assert response.response is None
    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.name == "NoAnswerEngine.query"
    assert sc.OUTPUT_VALUE not in root.attributes
    record = extract_record(tracing.spans())
    assert record is not None and (record.question, record.answer) == (QUESTION, None)


def test_huge_nodes_are_recorded_whole(tracing: InMemoryTracing) -> None:
    huge = "cats like boxes. " * 100_000  # 1.7 MB, more than any LLM's context
    llamaindex.instrument(tracing.provider)
    engine = RetrieveOnlyEngine(retriever=index([TextNode(text=huge, id_="huge")]).as_retriever())
    engine.query(QUESTION)

    record = extract_record(tracing.spans())
    assert record is not None
    assert record.context_texts == [huge]


def test_many_nodes_are_capped_with_the_true_count(tracing: InMemoryTracing) -> None:
    many = [TextNode(text=f"passage {i}", id_=f"n{i}") for i in range(300)]
    llamaindex.instrument(tracing.provider, max_documents=250)
    index(many).as_query_engine(llm=MockLLM(), similarity_top_k=300).query(QUESTION)

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert retriever.attributes["ragas.retrieval.documents_total"] == 300
    # Kept under the SDK's attribute limit (128), so the span kind is never pushed out.
    assert retriever.attributes[sc.SPAN_KIND] == sc.KIND_RETRIEVER
    assert len(retriever.attributes) <= 128
    assert 0 < len(extract_record(tracing.spans()).contexts) < 128  # type: ignore[union-attr]


def test_our_failure_is_logged_once_counted_and_never_reaches_the_app(
        tracing: InMemoryTracing, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(*args: object) -> None:
        raise TypeError("collector bug")

    monkeypatch.setenv("RAGAS_TRACE_RAISE_INTERNAL_ERRORS", "0")
    monkeypatch.setattr(_attributes.DocumentAttributes, "add", broken)
    llamaindex.instrument(tracing.provider)
    engine = index().as_query_engine(llm=ScriptedLLM())

    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        answers = [str(engine.query(QUESTION)) for _ in range(3)]

    assert answers == [ANSWER] * 3
    assert internal_error_counts() == {"llamaindex.span_exit": 3}
    assert len([r for r in caplog.records if "llamaindex.span_exit" in r.getMessage()]) == 1
    # The retriever span was still ended, and the request still makes a trace.
    assert len(tracing.by_trace()) == 3
    assert all(kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
               for spans in tracing.by_trace().values())
    reset_internal_error_counts()


def test_suppressed_context_is_not_traced(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = index().as_query_engine(llm=MockLLM())
    token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        engine.query(QUESTION)
    finally:
        otel_context.detach(token)
    assert tracing.spans() == ()

    engine.query(QUESTION)
    assert len(tracing.by_trace()) == 1


def test_tags_limit_capture_to_tagged_requests(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider, tags={"app": "support"}, app_name="support")
    engine = index().as_query_engine(llm=MockLLM())

    engine.query("untagged?")
    with instrument_tags({"app": "sales"}):
        engine.query("other app?")
    with instrument_tags({"app": "support", "user": "u1"}):
        engine.query(QUESTION)

    roots = [s for s in tracing.spans() if s.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN]
    assert [r.attributes[sc.INPUT_VALUE] for r in roots] == [QUESTION]
    assert roots[0].attributes[sc.RAGAS_APP_NAME] == "support"
    assert len(tracing.spans()) == 3


def test_engines_limit_capture_to_those_engines(tracing: InMemoryTracing) -> None:
    shared = index()
    mine = shared.as_query_engine(llm=MockLLM())
    other = shared.as_query_engine(llm=MockLLM())
    llamaindex.instrument(tracing.provider, engines=[mine], app_name="mine")
    chat_installation = llamaindex.instrument(tracing.provider, engines=[],
                                              app_name="nothing")

    other.query("not mine?")
    mine.query(QUESTION)

    roots = [s for s in tracing.spans() if s.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN]
    assert [(r.attributes[sc.INPUT_VALUE], r.attributes[sc.RAGAS_APP_NAME])
            for r in roots] == [(QUESTION, "mine")]
    chat_installation.uninstrument()


def test_unfinished_streams_are_evicted_by_age(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider, run_ttl_s=0)
    engine = echo_engine(streaming=True)

    kept = engine.query("never read?")
    engine.query(QUESTION)  # starting a request sweeps the expired one

    assert kept.response_gen is not None
    evicted = [s for s in tracing.spans() if s.attributes.get(sc.RAGAS_RUN_EVICTED)]
    assert [s.attributes[sc.INPUT_VALUE] for s in evicted] == ["never read?"]
    assert evicted[0].status.status_code == StatusCode.ERROR
    assert evicted[0].attributes[sc.RAGAS_STREAM_STATUS] == "abandoned"
    assert installation.evicted_runs >= 1


def test_open_requests_stay_bounded(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider, max_open_runs=5)
    engine = echo_engine(streaming=True)

    unread = [engine.query(f"q{i}?") for i in range(50)]

    assert len(unread) == 50
    assert installation.open_runs == 5
    assert installation.evicted_runs == 45
    # Only the open requests' roots (and their pending LLM calls) stay mapped.
    assert installation.tracker.open_spans <= 5
    evicted = [s.attributes[sc.INPUT_VALUE] for s in tracing.spans()
               if s.attributes.get(sc.RAGAS_RUN_EVICTED)]
    assert evicted == [f"q{i}?" for i in range(45)]
    # A request read after its eviction still gives the user every token.
    assert "".join(unread[0].response_gen) != ""


def test_uninstrument_ends_open_requests(tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)
    response = echo_engine(streaming=True).query(QUESTION)

    llamaindex.uninstrument()

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == "abandoned"
    assert installation.open_runs == 0
    assert "".join(response.response_gen)


def test_model_provider_and_usage_readers() -> None:
    class FakeOpenAI:
        model = "gpt-4o-mini"

    FakeOpenAI.__module__ = "llama_index.llms.openai.base"

    class Usage:
        input_tokens, output_tokens = 7, 3

    class Raw:
        usage = Usage()

    class Reply:
        additional_kwargs: ClassVar[dict[str, int]] = {}
        raw: ClassVar[object] = Raw()

    assert _values.model_of(FakeOpenAI()) == "gpt-4o-mini"
    assert _values.provider_of(FakeOpenAI()) == "openai"
    assert _values.model_of(MockLLM()) is None
    assert _values.provider_of(MockLLM()) is None
    assert _values.usage_of(Reply()) == (7, 3, None)
    Reply.raw = {"usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
    assert _values.usage_of(Reply()) == (5, 2, 7)
    Reply.additional_kwargs = {"prompt_tokens": 1, "completion_tokens": 1}
    assert _values.usage_of(Reply()) == (1, 1, None)
    assert _values.usage_of(None) == (None, None, None)
