"""Reading the spans a collector made, for the tests of both frameworks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc


def by_kind(spans: Iterable[ReadableSpan], kind: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get(sc.SPAN_KIND) == kind]


def one(spans: Iterable[ReadableSpan], kind: str) -> ReadableSpan:
    found = by_kind(spans, kind)
    assert len(found) == 1, [s.name for s in found]
    return found[0]


def kinds(spans: Iterable[ReadableSpan]) -> list[str]:
    return sorted(str((s.attributes or {}).get(sc.SPAN_KIND)) for s in spans)


def rag_request(spans: Sequence[ReadableSpan]
                ) -> tuple[ReadableSpan, ReadableSpan, ReadableSpan]:
    """The root, retriever and LLM spans of one request, checked to form one trace in
    which the root has no parent and is the parent of the other two."""
    root, retriever, llm = (one(spans, k) for k in (sc.KIND_CHAIN, sc.KIND_RETRIEVER,
                                                       sc.KIND_LLM))
    assert root.parent is None
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    assert retriever.parent is not None and llm.parent is not None
    assert retriever.parent.span_id == root.context.span_id
    assert llm.parent.span_id == root.context.span_id
    return root, retriever, llm
