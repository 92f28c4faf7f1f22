"""The LangChain collector on a real langchain-core chain: what each span carries."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda
from langchain_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    QUESTION,
    EchoChatModel,
    EchoRetriever,
    FailingRetriever,
    rag_chain,
    tracing_fixture,
)
from opentelemetry import context as otel_context
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY
from opentelemetry.trace import StatusCode
from span_checks import by_kind, one, rag_request

from ragas_trace import extract_record
from ragas_trace import semconv as sc
from ragas_trace._internal_errors import internal_error_counts, reset_internal_error_counts
from ragas_trace.collectors.langchain import RagasCallbackHandler, _values
from ragas_trace.record import Context
from ragas_trace.testing import InMemoryTracing


def test_invoke_makes_one_trace_with_root_retriever_and_llm_spans(
        tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider, app_name="faq-bot")
    result = rag_chain().invoke(QUESTION, config={"callbacks": [handler]})

    assert result == ANSWER
    spans = tracing.spans()
    assert len(spans) == 3
    root, retriever, llm = rag_request(spans)
    assert root.name == "RunnableSequence"
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER
    assert type(root.attributes[sc.OUTPUT_VALUE]) is str
    assert root.attributes[sc.RAGAS_APP_NAME] == "faq-bot"
    assert root.attributes[sc.RAGAS_FRAMEWORK] == "langchain"
    assert root.status.status_code == StatusCode.UNSET
    assert sc.RAGAS_STREAM_STATUS not in root.attributes
    assert root.start_time <= retriever.start_time <= retriever.end_time <= llm.start_time
    assert llm.end_time <= root.end_time

    docs = retriever.attributes
    assert docs[sc.GEN_AI_OPERATION_NAME] == sc.GEN_AI_OPERATION_RETRIEVAL
    assert docs[sc.INPUT_VALUE] == QUESTION
    assert docs["ragas.retrieval.documents_total"] == 2
    assert docs[sc.document_key(0, sc.DOCUMENT_CONTENT)] == f"Passage one about {QUESTION}."
    assert docs[sc.document_key(0, sc.DOCUMENT_ID)] == f"doc-1:{QUESTION}"
    assert docs[sc.document_key(0, sc.DOCUMENT_SCORE)] == 0.91
    assert docs[sc.document_key(1, sc.DOCUMENT_ID)] == "doc-2"
    assert sc.document_key(1, sc.DOCUMENT_SCORE) not in docs
    assert '"kb/two.md"' in docs[sc.document_key(1, sc.DOCUMENT_METADATA)]

    usage = llm.attributes
    assert usage[sc.LLM_MODEL_NAME] == usage[sc.GEN_AI_REQUEST_MODEL] == "echo-1"
    assert usage[sc.LLM_PROVIDER] == usage[sc.GEN_AI_PROVIDER_NAME] == "fake"
    assert usage[sc.GEN_AI_OPERATION_NAME] == sc.GEN_AI_OPERATION_CHAT
    assert usage[sc.LLM_TOKEN_COUNT_PROMPT] == usage[sc.GEN_AI_USAGE_INPUT_TOKENS] == 12
    assert usage[sc.LLM_TOKEN_COUNT_COMPLETION] == usage[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert usage[sc.LLM_TOKEN_COUNT_TOTAL] == 17
    assert handler.open_runs == 0


def test_extract_record_reads_back_what_the_handler_wrote(tracing: InMemoryTracing) -> None:
    rag_chain().invoke(QUESTION, config={"callbacks": [
        RagasCallbackHandler(tracing.provider, app_name="faq-bot")]})

    record = extract_record(tracing.spans())

    assert record is not None
    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert record.question == QUESTION
    assert record.answer == ANSWER
    assert record.contexts == (
        Context(f"Passage one about {QUESTION}.", id=f"doc-1:{QUESTION}", score=0.91,
                metadata={"source": "kb/one.md", "score": 0.91}),
        Context(f"Passage two about {QUESTION}.", id="doc-2",
                metadata={"source": "kb/two.md", "id": "doc-2"}),
    )
    assert (record.trace_id, record.span_id) == (root.context.trace_id, root.context.span_id)
    assert record.app_name == "faq-bot"
    assert record.framework == "langchain"
    assert (record.prompt_tokens, record.completion_tokens) == (12, 5)
    assert record.error is None


def test_usage_reported_in_llm_output_is_read_too(tracing: InMemoryTracing) -> None:
    chain = rag_chain(model=EchoChatModel(usage_in_llm_output=True))
    chain.invoke(QUESTION, config={"callbacks": [RagasCallbackHandler(tracing.provider)]})

    llm = one(tracing.spans(), sc.KIND_LLM).attributes
    assert llm[sc.LLM_TOKEN_COUNT_PROMPT] == llm[sc.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert llm[sc.LLM_TOKEN_COUNT_COMPLETION] == llm[sc.GEN_AI_USAGE_OUTPUT_TOKENS] == 7
    assert llm[sc.LLM_TOKEN_COUNT_TOTAL] == 18
    assert llm[sc.GEN_AI_RESPONSE_MODEL] == "echo-1-0613"


def test_trace_sits_under_the_span_current_when_the_chain_is_called(
        tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    with tracing.tracer.start_as_current_span("GET /ask") as server_span:
        rag_chain().invoke(QUESTION, config={"callbacks": [handler]})

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.parent is not None
    assert root.parent.span_id == server_span.get_span_context().span_id
    assert root.context.trace_id == server_span.get_span_context().trace_id
    assert extract_record(tracing.spans()).question == QUESTION  # type: ignore[union-attr]


def test_suppressed_instrumentation_makes_no_spans(tracing: InMemoryTracing) -> None:
    handler = RagasCallbackHandler(tracing.provider)
    token = otel_context.attach(otel_context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        result = rag_chain().invoke(QUESTION, config={"callbacks": [handler]})
    finally:
        otel_context.detach(token)

    assert result == ANSWER
    assert tracing.spans() == ()
    assert handler.open_runs == 0


@pytest.mark.parametrize(("inputs", "question"), [
    ({"question": QUESTION}, QUESTION),
    ({"input": QUESTION, "chat_history": []}, QUESTION),
    ({"query": QUESTION}, QUESTION),
])
def test_question_found_in_dict_inputs(tracing: InMemoryTracing, inputs: dict[str, Any],
                                       question: str) -> None:
    chain = RunnableLambda(lambda d: next(iter(d.values()))) | rag_chain()
    chain.invoke(inputs, config={"callbacks": [RagasCallbackHandler(tracing.provider)]})

    assert one(tracing.spans(), sc.KIND_CHAIN).attributes[sc.INPUT_VALUE] == question


@pytest.mark.parametrize("wrap", [
    lambda text: {"answer": text, "context": ["ignored"]},
    lambda text: {"output": text},
    lambda text: {"result": text},
])
def test_answer_found_in_dict_outputs(tracing: InMemoryTracing, wrap: Any) -> None:
    chain = rag_chain() | RunnableLambda(wrap)
    chain.invoke(QUESTION, config={"callbacks": [RagasCallbackHandler(tracing.provider)]})

    assert one(tracing.spans(), sc.KIND_CHAIN).attributes[sc.OUTPUT_VALUE] == ANSWER


def test_answer_taken_from_an_ai_message(tracing: InMemoryTracing) -> None:
    chain = RunnableLambda(lambda q: q) | EchoChatModel()
    message = chain.invoke(QUESTION, config={"callbacks": [RagasCallbackHandler(
        tracing.provider)]})

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.OUTPUT_VALUE] == message.content == ANSWER


def test_retriever_error_is_recorded_and_reaches_the_caller_unchanged(
        tracing: InMemoryTracing) -> None:
    chain = rag_chain(retriever=FailingRetriever())
    with pytest.raises(RuntimeError, match="index unavailable"):
        chain.invoke(QUESTION, config={"callbacks": [RagasCallbackHandler(tracing.provider)]})

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    root = one(tracing.spans(), sc.KIND_CHAIN)
    for span in (retriever, root):
        assert span.status.status_code == StatusCode.ERROR
        assert "index unavailable" in (span.status.description or "")
        assert [e.name for e in span.events] == ["exception"]
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    record = extract_record(tracing.spans())
    assert record is not None and record.error and "RuntimeError" in record.error


def test_handler_failure_never_reaches_the_chain(tracing: InMemoryTracing,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGAS_TRACE_RAISE_INTERNAL_ERRORS", "0")

    def broken(outputs: Any) -> str:
        raise ValueError("extractor bug")

    monkeypatch.setattr(_values, "answer_of", broken)
    result = rag_chain().invoke(QUESTION, config={"callbacks": [
        RagasCallbackHandler(tracing.provider)]})

    assert result == ANSWER
    assert internal_error_counts() == {"langchain.on_chain_end": 1}
    reset_internal_error_counts()
    root = one(tracing.spans(), sc.KIND_CHAIN)  # ended despite the failure
    assert root.attributes[sc.INPUT_VALUE] == QUESTION


def test_handler_does_not_hop_threads_or_raise() -> None:
    assert RagasCallbackHandler.run_inline is True
    assert RagasCallbackHandler.raise_error is False


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"max_documents": -1}, "max_documents"),
    ({"max_documents": 2.5}, "max_documents"),
    ({"run_ttl_s": float("nan")}, "run_ttl_s"),
    ({"max_open_runs": 0}, "max_open_runs"),
    ({"app_name": 3}, "app_name"),
])
def test_bad_settings_raise_naming_the_parameter(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        RagasCallbackHandler(**kwargs)


def test_bad_environment_value_falls_back_to_the_default(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        tracing: InMemoryTracing) -> None:
    monkeypatch.setenv("RAGAS_TRACE_MAX_DOCUMENTS", "lots")
    monkeypatch.setenv("RAGAS_TRACE_RUN_TTL_S", "-5")
    handler = RagasCallbackHandler(tracing.provider)

    assert "RAGAS_TRACE_MAX_DOCUMENTS" in caplog.text
    assert "RAGAS_TRACE_RUN_TTL_S" in caplog.text
    rag_chain().invoke(QUESTION, config={"callbacks": [handler]})
    assert one(tracing.spans(), sc.KIND_RETRIEVER).attributes[
        "ragas.retrieval.documents_total"] == 2


def test_environment_sets_the_document_cap(monkeypatch: pytest.MonkeyPatch,
                                           tracing: InMemoryTracing) -> None:
    monkeypatch.setenv("RAGAS_TRACE_MAX_DOCUMENTS", "1")
    rag_chain().invoke(QUESTION, config={"callbacks": [RagasCallbackHandler(tracing.provider)]})

    record = extract_record(tracing.spans())
    assert record is not None and len(record.contexts) == 1


class QueryRewritingRetriever(EchoRetriever):
    """Calls a model before searching, as multi-query retrievers do."""

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Any]:
        EchoChatModel().invoke(query, config={"callbacks": run_manager.get_child()})
        return super()._get_relevant_documents(query, run_manager=run_manager)


def test_model_called_inside_a_retriever_is_parented_to_the_retriever_span(
        tracing: InMemoryTracing) -> None:
    rag_chain(retriever=QueryRewritingRetriever()).invoke(
        QUESTION, config={"callbacks": [RagasCallbackHandler(tracing.provider)]})

    spans = tracing.spans()
    root = one(spans, sc.KIND_CHAIN)
    retriever = one(spans, sc.KIND_RETRIEVER)
    inner, outer = sorted(by_kind(spans, sc.KIND_LLM), key=lambda s: s.start_time)
    assert inner.parent.span_id == retriever.context.span_id
    assert outer.parent.span_id == root.context.span_id
    assert retriever.start_time < inner.start_time <= inner.end_time <= retriever.end_time
    # Made early for its child, the retriever span still gets its passages at the end.
    assert retriever.attributes["ragas.retrieval.documents_total"] == 2
    record = extract_record(spans)
    assert record is not None and len(record.contexts) == 2
    assert record.prompt_tokens == 24
