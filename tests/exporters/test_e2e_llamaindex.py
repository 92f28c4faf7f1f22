"""The LlamaIndex collector feeds the same processor: a query engine request is
scored and its passages reach the judge."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.exporters.evaluation_span import SPAN_NAME
from ragas_trace.testing.scripted_judge import ScriptedJudge


def test_llamaindex_query_is_scored():
    from llama_index.core.llms import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from ragas_trace.collectors import llamaindex

    class Passages(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [NodeWithScore(node=TextNode(text="Paris is the capital of France.",
                                                id_="doc-0"), score=0.9)]

    exporter = InMemorySpanExporter()
    judge = ScriptedJudge()
    rt = ragas_trace.setup(judge=judge, tracer_provider=TracerProvider(), exporter=exporter)
    instrumentation = llamaindex.instrument(tracer_provider=rt.tracer_provider)
    try:
        engine = RetrieverQueryEngine.from_args(Passages(), llm=MockLLM(max_tokens=4))
        engine.query("What is the capital of France?")
        assert rt.force_flush(timeout_s=10)
    finally:
        instrumentation.uninstrument()
        rt.shutdown(timeout_s=5)
    spans = exporter.get_finished_spans()
    (root,) = [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN]
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert root.attributes[sc.RAGAS_FRAMEWORK] == "llamaindex"
    assert judge.questions == ["What is the capital of France?"]
    assert judge.contexts == [["Paris is the capital of France."]]
    assert [s.links[0].context.span_id for s in spans if s.name == SPAN_NAME] == [
        root.context.span_id]
