"""The LlamaIndex collector on real llama-index-core engines: what each span carries,
for query and chat engines, sync and async, and what ``extract_record`` reads back."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index_instrumentation import Dispatcher
from llamaindex_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    PASSAGES,
    QUESTION,
    EventCounter,
    FailingRetriever,
    MockLLM,
    ScriptedLLM,
    index,
    memories_fixture,
    tracing_fixture,
)
from opentelemetry.trace import StatusCode
from span_checks import kinds, one, rag_request

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing


def test_query_makes_one_trace_with_root_retriever_and_llm_spans(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider, app_name="faq-bot")
    engine = index().as_query_engine(llm=ScriptedLLM(), similarity_top_k=2)

    response = engine.query(QUESTION)

    assert str(response) == ANSWER
    spans = tracing.spans()
    assert kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
    root, retriever, llm = rag_request(spans)
    assert root.name == "RetrieverQueryEngine.query"
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.INPUT_MIME_TYPE] == sc.MIME_TEXT
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER
    assert root.attributes[sc.RAGAS_APP_NAME] == "faq-bot"
    assert root.attributes[sc.RAGAS_FRAMEWORK] == "llamaindex"
    assert sc.RAGAS_STREAM_STATUS not in root.attributes
    assert root.status.status_code == StatusCode.UNSET
    assert root.start_time <= retriever.start_time <= retriever.end_time <= llm.start_time
    assert llm.end_time <= root.end_time

    docs = retriever.attributes
    assert docs[sc.GEN_AI_OPERATION_NAME] == sc.GEN_AI_OPERATION_RETRIEVAL
    assert docs[sc.INPUT_VALUE] == QUESTION
    assert docs["ragas.retrieval.documents_total"] == 2
    got = {docs[sc.document_key(i, sc.DOCUMENT_CONTENT)] for i in range(2)}
    assert got <= set(PASSAGES)
    for i in range(2):
        doc_id = docs[sc.document_key(i, sc.DOCUMENT_ID)]
        assert docs[sc.document_key(i, sc.DOCUMENT_CONTENT)] == PASSAGES[int(doc_id[-1])]
        assert isinstance(docs[sc.document_key(i, sc.DOCUMENT_SCORE)], float)
        assert f'"kb/{doc_id[-1]}.md"' in docs[sc.document_key(i, sc.DOCUMENT_METADATA)]

    usage = llm.attributes
    assert usage[sc.LLM_MODEL_NAME] == usage[sc.GEN_AI_REQUEST_MODEL] == "scripted-1"
    assert usage[sc.GEN_AI_OPERATION_NAME] == sc.GEN_AI_OPERATION_CHAT
    assert usage[sc.LLM_TOKEN_COUNT_PROMPT] == usage[sc.GEN_AI_USAGE_INPUT_TOKENS] == 12
    assert usage[sc.LLM_TOKEN_COUNT_COMPLETION] == usage[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert usage[sc.LLM_TOKEN_COUNT_TOTAL] == 17


def test_extract_record_reads_back_the_request(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider, app_name="faq-bot")
    response = index().as_query_engine(llm=ScriptedLLM(), similarity_top_k=3).query(QUESTION)

    record = extract_record(tracing.spans())

    assert record is not None
    assert record.question == QUESTION
    assert record.answer == ANSWER
    assert record.app_name == "faq-bot"
    assert record.framework == "llamaindex"
    assert sorted(record.context_texts) == sorted(PASSAGES)
    assert [c.id for c in record.contexts] == [n.node.node_id for n in response.source_nodes]
    assert [c.score for c in record.contexts] == [n.score for n in response.source_nodes]
    assert all(c.metadata and c.metadata["source"].startswith("kb/") for c in record.contexts)
    assert (record.prompt_tokens, record.completion_tokens) == (12, 5)


async def test_aquery_duplicate_completion_end_gives_one_llm_span(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    counter = EventCounter()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(counter)
    try:
        response = await index().as_query_engine(llm=MockLLM(max_tokens=3)).aquery(QUESTION)
    finally:
        _remove_event_handler(dispatcher, counter)

    # LlamaIndex itself reports the completion twice (acomplete wraps complete)...
    assert counter.counts["LLMCompletionEndEvent"] == 2
    spans = tracing.spans()
    # ...and the trace still has exactly one LLM span.
    assert kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
    root = one(spans, sc.KIND_CHAIN)
    assert root.name == "RetrieverQueryEngine.aquery"
    assert root.attributes[sc.OUTPUT_VALUE] == str(response) == "text text text"
    assert one(spans, sc.KIND_LLM).parent.span_id == root.context.span_id


def test_results_are_the_same_with_and_without_capture(tracing: InMemoryTracing) -> None:
    engine = index().as_query_engine(llm=ScriptedLLM(), similarity_top_k=2)
    plain = engine.query(QUESTION)
    llamaindex.instrument(tracing.provider)
    traced = engine.query(QUESTION)

    assert type(traced) is type(plain)
    assert traced.response == plain.response
    assert [(n.node.node_id, n.score) for n in traced.source_nodes] == [
        (n.node.node_id, n.score) for n in plain.source_nodes]
    assert traced.metadata == plain.metadata


def test_retriever_failure_marks_the_root_and_reaches_the_caller(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = RetrieverQueryEngine.from_args(FailingRetriever(), llm=MockLLM())

    with pytest.raises(ConnectionError, match="vector store unreachable"):
        engine.query(QUESTION)

    spans = tracing.spans()
    root, retriever = one(spans, sc.KIND_CHAIN), one(spans, sc.KIND_RETRIEVER)
    assert root.status.status_code == retriever.status.status_code == StatusCode.ERROR
    assert "ConnectionError" in (root.status.description or "")
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert sc.OUTPUT_VALUE not in root.attributes
    assert any(e.name == "exception" for e in root.events)


@pytest.mark.parametrize("mode", ["condense_plus_context", "context"])
def test_chat_engines_carry_the_users_message_and_their_retrieval(
        tracing: InMemoryTracing, memories: Callable[..., Memory], mode: str) -> None:
    llamaindex.instrument(tracing.provider)
    engine = index().as_chat_engine(chat_mode=mode, llm=ScriptedLLM(), similarity_top_k=2,
                                    memory=memories())

    first = engine.chat("Tell me about cats.")
    second = engine.chat(QUESTION)

    traces = [spans for spans in tracing.by_trace().values()]
    assert len(traces) == 2
    records = sorted((extract_record(spans) for spans in traces),
                     key=lambda r: r.start_time_ns if r else 0)
    assert [r.question for r in records if r] == ["Tell me about cats.", QUESTION]
    assert [r.answer for r in records if r] == [str(first), str(second)] == [ANSWER, ANSWER]
    for spans in traces:
        root = one(spans, sc.KIND_CHAIN)
        assert root.name.endswith(".chat")
        retriever = one(spans, sc.KIND_RETRIEVER)
        assert retriever.parent.span_id == root.context.span_id
        assert retriever.attributes["ragas.retrieval.documents_total"] == 2
    if mode == "condense_plus_context":
        # With history the question is first condensed by the LLM: a second LLM span
        # in the same request, while the root keeps the user's own words.
        later = max(traces, key=lambda spans: one(spans, sc.KIND_CHAIN).start_time)
        assert kinds(later).count(sc.KIND_LLM) == 2


async def test_achat_is_captured_like_chat(tracing: InMemoryTracing,
                                           memories: Callable[..., Memory]) -> None:
    llamaindex.instrument(tracing.provider)
    engine = index().as_chat_engine(chat_mode="context", llm=ScriptedLLM(), memory=memories())

    response = await engine.achat(QUESTION)

    record = extract_record(tracing.spans())
    assert record is not None
    assert (record.question, record.answer) == (QUESTION, str(response))
    assert len(record.contexts) == 2
    assert one(tracing.spans(), sc.KIND_CHAIN).name == "ContextChatEngine.achat"


def test_uninstrument_removes_the_handlers(tracing: InMemoryTracing) -> None:
    dispatcher = get_dispatcher()
    before = (list(dispatcher.span_handlers), list(dispatcher.event_handlers))
    llamaindex.instrument(tracing.provider)
    llamaindex.instrument(tracing.provider)  # same scope: replaces, never doubles
    assert len(dispatcher.span_handlers) == len(before[0]) + 1
    engine = index().as_query_engine(llm=MockLLM())
    engine.query(QUESTION)
    assert len(tracing.named("RetrieverQueryEngine.query")) == 1

    llamaindex.uninstrument()
    engine.query(QUESTION)

    assert (dispatcher.span_handlers, dispatcher.event_handlers) == before
    assert len(tracing.named("RetrieverQueryEngine.query")) == 1


def test_bad_arguments_raise_naming_the_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="max_documents"):
        llamaindex.instrument(max_documents=-1)
    with pytest.raises(ValueError, match="app_name"):
        llamaindex.instrument(app_name=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tags"):
        llamaindex.instrument(tags=["x"])  # type: ignore[arg-type]
    monkeypatch.setenv("RAGAS_TRACE_RUN_TTL_S", "soon")
    installation = llamaindex.instrument()
    try:
        assert installation.tracker._run_ttl_s == 600.0
    finally:
        installation.uninstrument()


def _remove_event_handler(dispatcher: Dispatcher, handler: EventCounter) -> None:
    dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not handler]


def test_question_from_a_query_bundle(tracing: InMemoryTracing) -> None:
    from llama_index.core.schema import QueryBundle

    llamaindex.instrument(tracing.provider)
    index().as_query_engine(llm=MockLLM()).query(QueryBundle(query_str=QUESTION))

    assert one(tracing.spans(), sc.KIND_CHAIN).attributes[sc.INPUT_VALUE] == QUESTION



def test_request_is_a_child_of_the_span_current_when_it_started(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)
    engine = index().as_query_engine(llm=ScriptedLLM(), streaming=True)
    with tracing.tracer.start_as_current_span("POST /ask") as server:
        response = engine.query(QUESTION)
    # Read after the server span ended, outside its context: the request stays under it.
    assert "".join(response.response_gen) == ANSWER

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.parent is not None
    assert root.parent.span_id == server.get_span_context().span_id
    assert root.context.trace_id == server.get_span_context().trace_id
