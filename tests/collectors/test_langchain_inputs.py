"""Missing pieces and hostile values: always a valid trace with what is there."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    PROMPT,
    QUESTION,
    EchoChatModel,
    EchoRetriever,
    rag_chain,
    tracing_fixture,
)
from span_checks import one

from ragas_trace import extract_record
from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.testing import InMemoryTracing


def run(tracing: InMemoryTracing, chain: Any, value: Any, **kwargs: Any) -> Any:
    handler = RagasCallbackHandler(tracing.provider, **kwargs)
    result = chain.invoke(value, config={"callbacks": [handler]})
    assert handler.open_runs == 0
    return result


def test_chain_without_retriever(tracing: InMemoryTracing) -> None:
    chain = RunnableLambda(lambda q: {"context": "", "question": q}) | PROMPT | EchoChatModel()
    run(tracing, chain, QUESTION)

    record = extract_record(tracing.spans())
    assert record is not None
    assert record.question == QUESTION and record.contexts == ()
    assert record.answer == ANSWER


def test_retriever_returning_no_documents(tracing: InMemoryTracing) -> None:
    run(tracing, rag_chain(EchoRetriever(docs_for=lambda q: [])), QUESTION)

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    assert retriever.attributes["ragas.retrieval.documents_total"] == 0
    record = extract_record(tracing.spans())
    assert record is not None and record.contexts == () and record.answer == ANSWER


def test_none_answer(tracing: InMemoryTracing) -> None:
    assert run(tracing, rag_chain() | RunnableLambda(lambda _: None), QUESTION) is None

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert sc.OUTPUT_VALUE not in root.attributes
    record = extract_record(tracing.spans())
    assert record is not None and record.answer is None and record.question == QUESTION


def test_dict_without_known_keys(tracing: InMemoryTracing) -> None:
    chain = RunnableLambda(lambda d: {"reply": d["q"], "n": 3})
    assert run(tracing, chain, {"q": QUESTION, "blob": object()}) == {"reply": QUESTION, "n": 3}

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert sc.INPUT_VALUE not in root.attributes
    assert sc.OUTPUT_VALUE not in root.attributes
    assert root.attributes[sc.SPAN_KIND] == sc.KIND_CHAIN


def test_ten_thousand_passages_are_capped_within_the_attribute_limit(
        tracing: InMemoryTracing) -> None:
    docs = [Document(page_content=f"passage {i}", id=str(i), metadata={"score": 0.5})
            for i in range(10_000)]
    run(tracing, rag_chain(EchoRetriever(docs_for=lambda q: docs)), QUESTION)

    retriever = one(tracing.spans(), sc.KIND_RETRIEVER)
    attrs = retriever.attributes
    assert attrs["ragas.retrieval.documents_total"] == 10_000
    # The SDK drops the oldest attributes past its limit: the kind must survive.
    assert attrs[sc.SPAN_KIND] == sc.KIND_RETRIEVER
    assert retriever.dropped_attributes == 0
    record = extract_record(tracing.spans())
    assert record is not None
    assert 0 < len(record.contexts) <= 100
    assert [c.content for c in record.contexts] == [
        f"passage {i}" for i in range(len(record.contexts))]


def test_max_documents_caps_passages(tracing: InMemoryTracing) -> None:
    run(tracing, rag_chain(), QUESTION, max_documents=1)

    record = extract_record(tracing.spans())
    assert record is not None and len(record.contexts) == 1
    assert one(tracing.spans(), sc.KIND_RETRIEVER).attributes[
        "ragas.retrieval.documents_total"] == 2


def test_five_megabyte_passage_is_kept_whole(tracing: InMemoryTracing) -> None:
    big = "x" * (5 * 1024 * 1024)
    run(tracing, rag_chain(EchoRetriever(docs_for=lambda q: [Document(page_content=big)])),
        QUESTION)

    record = extract_record(tracing.spans())
    assert record is not None and record.contexts[0].content == big


def test_non_utf8_bytes_become_text(tracing: InMemoryTracing) -> None:
    raw = b"caf\xe9 \xff\xfe question"
    retriever = EchoRetriever(docs_for=lambda q: [b"\xff\xfe passage", {"page_content": b"\x80"}])
    chain = RunnableLambda(lambda b: b) | {
        "docs": RunnableLambda(lambda b: b.decode("latin-1")) | retriever,
        "question": RunnableLambda(lambda b: b),
    } | RunnableLambda(lambda d: d["question"])

    assert run(tracing, chain, raw) == raw

    root = one(tracing.spans(), sc.KIND_CHAIN)
    assert root.attributes[sc.INPUT_VALUE] == raw.decode("utf-8", errors="replace")
    assert root.attributes[sc.OUTPUT_VALUE] == raw.decode("utf-8", errors="replace")
    record = extract_record(tracing.spans())
    assert record is not None
    assert [c.content for c in record.contexts] == ["\ufffd\ufffd passage", "\ufffd"]


@pytest.mark.parametrize("docs", [
    [None, 42, {"unexpected": True}, Document(page_content="kept", metadata={"x": object()})],
    [Document(page_content="scored", metadata={"score": "high", "id": 7})],
])
def test_odd_documents_yield_what_they_can(tracing: InMemoryTracing, docs: list[Any]) -> None:
    run(tracing, rag_chain(EchoRetriever(docs_for=lambda q: docs)), QUESTION)

    record = extract_record(tracing.spans())
    assert record is not None
    assert len(record.contexts) == len(docs)
    assert record.contexts[-1].content in ("kept", "scored")
    assert all(c.score is None for c in record.contexts)


def test_message_list_input_uses_the_last_message(tracing: InMemoryTracing) -> None:
    from langchain_core.messages import HumanMessage, SystemMessage

    chain = EchoChatModel() | RunnableLambda(lambda m: m.content)
    run(tracing, RunnableLambda(lambda m: m) | chain,
        [SystemMessage("be brief"), HumanMessage([{"type": "text", "text": QUESTION}])])

    assert one(tracing.spans(), sc.KIND_CHAIN).attributes[sc.INPUT_VALUE] == QUESTION


@pytest.mark.parametrize("metadata", [
    {"source": "kb/a.md", "page": 3, "score": 0.25},
    {"quote": 'say "hi"\n', "accents": "café ☕", "sep": "\u2028"},
    {"nan": float("nan"), "inf": float("inf")},
    {"flag": True, "none": None, "nested": {"a": [1, 2]}},
    {7: "int key"},
    {"big": 10**30, "tiny": 1e-300, "neg": -0.0},
])
def test_passage_metadata_is_the_json_that_json_dumps_writes(
        tracing: InMemoryTracing, metadata: dict[Any, Any]) -> None:
    docs = [Document(page_content="p", metadata=metadata)]
    run(tracing, rag_chain(EchoRetriever(docs_for=lambda q: docs)), QUESTION)

    written = one(tracing.spans(), sc.KIND_RETRIEVER).attributes[
        sc.document_key(0, sc.DOCUMENT_METADATA)]
    assert written == json.dumps(metadata, default=str, ensure_ascii=False)
