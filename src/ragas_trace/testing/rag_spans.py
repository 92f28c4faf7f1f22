"""Record a RAG request's spans the way the collectors do (kind and question set at
span start; retriever and LLM children), for tests of everything downstream of the
collectors: processor, gateway, exporters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Tracer

from ragas_trace import semconv as sc
from ragas_trace.collectors import _attributes as at


def rag_request(tracer: Tracer, question: str = "What is the capital of France?",
                answer: str = "Paris is the capital of France.",
                docs: Sequence[str] = ("Paris is the capital and largest city of France.",),
                root_attributes: Mapping[str, Any] | None = None, name: str = "rag",
                llm_attributes: Mapping[str, Any] | None = None) -> int:
    """One request: root CHAIN > RETRIEVER, LLM (with ``llm_attributes`` added, e.g.
    another instrumentation's ``gen_ai.response.id``). Returns the root's span id."""
    attrs = dict(at.chain_attributes(name, "test", "test-app"))
    attrs.update(at.input_attributes(question))
    attrs.update(root_attributes or {})
    with tracer.start_as_current_span(name, attributes=attrs) as root:
        with tracer.start_as_current_span("retriever",
                                          attributes=dict(at.retriever_attributes())) as ret:
            for i, doc in enumerate(docs):
                ret.set_attributes(dict(at.document_attributes(i, doc, doc_id=f"d{i}")))
        with tracer.start_as_current_span("llm", attributes=dict(
                at.llm_attributes("m", "p", 10, 5))) as llm:
            llm.set_attribute(sc.OUTPUT_VALUE, answer)
            llm.set_attributes(dict(llm_attributes or {}))
        root.set_attributes(dict(at.output_attributes(answer)))
        return int(root.get_span_context().span_id)


def evaluation_status(span: ReadableSpan) -> Any:
    """``ragas.evaluation.status`` of a span, or None."""
    return (span.attributes or {}).get(sc.RAGAS_EVALUATION_STATUS)
