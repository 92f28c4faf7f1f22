"""Span extraction takes any text in every attribute it reads (issue 30): the
question and answer (``input.value`` / ``output.value`` and OpenLLMetry's entity
input / output, plain or JSON), the retrieved and reranked passages (OpenInference
document attributes and OpenLLMetry's JSON of documents and nodes), in any shape:
arbitrary JSON, JSON nested 10,000 deep, numbers past a float, tokens of 100,000
characters. Invariant: ``extract_record`` never raises; it gives a record whose
fields have their documented types (or ``None`` when there is no root with a
question), and a passage's score is a finite number or ``None``."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from opentelemetry.util.types import AttributeValue

from any_text import REGRESSIONS, any_text, scaled
from ragas_trace import semconv as sc
from ragas_trace.extract import extract_record
from ragas_trace.record import RagRecord
from ragas_trace.testing import InMemoryTracing

pytestmark = pytest.mark.usefixtures("no_internal_errors")

DEEP = 10_000
# The keys extraction looks for, so that drawn JSON reaches every branch of it.
_KEYS = ("question", "input", "query", "query_str", "answer", "output", "result",
         "response", "text", "content", "messages", "role", "type", "kwargs", "inputs",
         "outputs", "generations", "documents", "page_content", "metadata", "id", "node",
         "id_", "score", "tool_calls", "lc")
_NUMBERS = st.one_of(st.integers(), st.integers(min_value=10**300, max_value=10**400),
                     st.floats(allow_nan=True, allow_infinity=True))
_LEAVES = st.one_of(st.none(), st.booleans(), _NUMBERS, any_text(max_pieces=3, large=False),
                    st.sampled_from(["user", "human", "assistant", "ai", "AIMessage"]))
_JSON = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(st.sampled_from(_KEYS), any_text(max_pieces=2, large=False)),
                    inner, max_size=5)), max_leaves=20)
_DEEP_JSON = st.sampled_from([
    "[" * DEEP + "]" * DEEP,
    '{"a":' * DEEP + "1" + "}" * DEEP,
    '{"question":' * DEEP + '"q"' + "}" * DEEP,
    '{"messages": ' + "[" * DEEP + "]" * DEEP + "}",
    "[" * DEEP + '{"node": {"text": "x"}, "score": 1}' + "]" * DEEP,
])
# What any attribute may hold: any text, any JSON, JSON nested past the recursion
# limit, the strings that broke something; and, less often, not a string at all.
_TEXT_VALUES = st.one_of(
    any_text(), _JSON.map(json.dumps), _DEEP_JSON, st.sampled_from(REGRESSIONS),
    _JSON.map(lambda v: json.dumps({"outputs": v})),
    _JSON.map(lambda v: json.dumps([{"node": v, "score": v}, {"kwargs": v}, json.dumps(v)])))
_VALUES: st.SearchStrategy[AttributeValue] = st.one_of(
    _TEXT_VALUES, _TEXT_VALUES, _TEXT_VALUES, st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(any_text(max_pieces=2, large=False), max_size=3))

_ROOT_KEYS = (sc.INPUT_VALUE, sc.OUTPUT_VALUE, sc.TRACELOOP_ENTITY_INPUT,
              sc.TRACELOOP_ENTITY_OUTPUT, sc.RAGAS_APP_NAME, sc.RAGAS_FRAMEWORK)
_DOC_FIELDS = (sc.DOCUMENT_CONTENT, sc.DOCUMENT_ID, sc.DOCUMENT_SCORE, sc.DOCUMENT_METADATA)


def _doc_attributes(prefix: str) -> st.SearchStrategy[dict[str, AttributeValue]]:
    keys = st.tuples(st.integers(0, 3), st.sampled_from(_DOC_FIELDS)).map(
        lambda k: sc.document_key(k[0], k[1], prefix))
    return st.dictionaries(keys, _VALUES, max_size=6)


_RETRIEVER = st.tuples(
    st.sampled_from([{sc.SPAN_KIND: sc.KIND_RETRIEVER},
                     {sc.TRACELOOP_SPAN_KIND: "task", sc.TRACELOOP_ENTITY_NAME: "retriever"}]),
    _doc_attributes(sc.RETRIEVAL_DOCUMENTS),
    st.dictionaries(st.just(sc.TRACELOOP_ENTITY_OUTPUT), _VALUES, max_size=1),
).map(lambda t: {**t[0], **t[1], **t[2]})
_RERANKER = _doc_attributes(sc.RERANKER_OUTPUT_DOCUMENTS).map(
    lambda d: {sc.SPAN_KIND: sc.KIND_RERANKER, **d})
_LLM = st.dictionaries(st.sampled_from([sc.LLM_TOKEN_COUNT_PROMPT, sc.LLM_TOKEN_COUNT_COMPLETION,
                                        sc.GEN_AI_RESPONSE_ID]), _VALUES, max_size=3).map(
    lambda d: {sc.SPAN_KIND: sc.KIND_LLM, **d})


def _record(root: dict[str, AttributeValue],
            children: list[dict[str, AttributeValue]]) -> RagRecord | None:
    tracing = InMemoryTracing()
    tracer = tracing.tracer
    with tracer.start_as_current_span("rag", attributes={sc.SPAN_KIND: sc.KIND_CHAIN, **root}):
        for attributes in children:
            with tracer.start_as_current_span("child", attributes=attributes):
                pass
    return extract_record(tracing.spans())


def _assert_plain(record: RagRecord | None) -> None:
    if record is None:
        return
    assert record.question is None or isinstance(record.question, str)
    assert record.answer is None or isinstance(record.answer, str)
    for context in record.contexts:
        assert isinstance(context.content, str)
        assert context.id is None or isinstance(context.id, str)
        assert context.score is None or (isinstance(context.score, float)
                                         and math.isfinite(context.score)), context.score
    for tokens in (record.prompt_tokens, record.completion_tokens):
        assert tokens is None or isinstance(tokens, int)
    assert record.response_id is None or isinstance(record.response_id, str)


@scaled(60)
@given(root=st.dictionaries(st.sampled_from(_ROOT_KEYS), _VALUES, max_size=6),
       children=st.lists(st.one_of(_RETRIEVER, _RERANKER, _LLM), max_size=4))
@example(root={sc.INPUT_VALUE: "[" * DEEP + "]" * DEEP,
               sc.OUTPUT_VALUE: '{"a":' * DEEP + "1" + "}" * DEEP},
         children=[{sc.SPAN_KIND: sc.KIND_RETRIEVER,
                    sc.document_key(0, sc.DOCUMENT_METADATA): "[" * DEEP + "]" * DEEP}])
@example(root={sc.INPUT_VALUE: "q"},
         children=[{sc.SPAN_KIND: sc.KIND_RETRIEVER,
                    sc.document_key(0, sc.DOCUMENT_CONTENT): "a",
                    sc.document_key(0, sc.DOCUMENT_SCORE): math.nan,
                    sc.document_key(1, sc.DOCUMENT_CONTENT): "b",
                    sc.document_key(1, sc.DOCUMENT_SCORE): -math.inf},
                   {sc.TRACELOOP_SPAN_KIND: "task", sc.TRACELOOP_ENTITY_NAME: "retriever",
                    sc.TRACELOOP_ENTITY_OUTPUT: '[{"node": {"text": "x"}, "score": 1' + "0" * 400
                    + '}, {"kwargs": null}]'}])
def test_any_attributes_give_a_record_or_none(root: dict[str, AttributeValue],
                                              children: list[dict[str, AttributeValue]]
                                              ) -> None:
    _assert_plain(_record(root, children))


@scaled(40)
@given(question=_TEXT_VALUES, answer=_TEXT_VALUES, passage=_TEXT_VALUES,
       documents=_TEXT_VALUES)
def test_any_text_in_an_ordinary_trace_keeps_the_record(question: str, answer: str,
                                                        passage: str, documents: str) -> None:
    # A question is present (a string attribute always gives one), so there is a record.
    record = _record({sc.INPUT_VALUE: question, sc.OUTPUT_VALUE: answer},
                     [{sc.SPAN_KIND: sc.KIND_RETRIEVER,
                       sc.document_key(0, sc.DOCUMENT_CONTENT): passage,
                       sc.document_key(0, sc.DOCUMENT_METADATA): documents},
                      {sc.TRACELOOP_SPAN_KIND: "task", sc.TRACELOOP_ENTITY_NAME: "retriever",
                       sc.TRACELOOP_ENTITY_OUTPUT: documents}])
    assert record is not None
    _assert_plain(record)
    assert record.contexts[0].content == passage


@pytest.mark.parametrize("text", REGRESSIONS, ids=range(len(REGRESSIONS)))
def test_every_string_that_broke_something_is_read(text: str) -> None:
    attributes: dict[str, Any] = {sc.INPUT_VALUE: text, sc.OUTPUT_VALUE: text}
    record = _record(attributes, [{sc.SPAN_KIND: sc.KIND_RETRIEVER,
                                   sc.document_key(0, sc.DOCUMENT_CONTENT): text,
                                   sc.document_key(0, sc.DOCUMENT_METADATA): text},
                                  {sc.TRACELOOP_SPAN_KIND: "task",
                                   sc.TRACELOOP_ENTITY_NAME: "retriever",
                                   sc.TRACELOOP_ENTITY_OUTPUT: text}])
    assert record is not None
    _assert_plain(record)
