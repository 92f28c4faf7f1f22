"""A custom LlamaIndex ``Workflow`` (retrieve step -> synthesize step), traced and
scored offline: the run is the request's root, its question the start event's
``query``, its answer the ``StopEvent`` result, its passages the retrieve step's.

    pip install -e '.[llamaindex,local]'   # in a clone of this repository
    python examples/llamaindex_workflow.py
"""

from __future__ import annotations

import asyncio

from _llamaindex_offline import ExtractiveLLM, build_index, print_scores
from llama_index.core import VectorStoreIndex, get_response_synthesizer
from llama_index.core.schema import NodeWithScore
from llama_index.core.workflow import Context, Event, StartEvent, StopEvent, Workflow, step
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.collectors import llamaindex


class RetrieverEvent(Event):
    nodes: list[NodeWithScore]


class RAGWorkflow(Workflow):
    def __init__(self, index: VectorStoreIndex, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.index = index

    @step
    async def retrieve(self, ctx: Context, ev: StartEvent) -> RetrieverEvent:
        await ctx.store.set("query", ev.query)
        nodes = await self.index.as_retriever(similarity_top_k=1).aretrieve(ev.query)
        return RetrieverEvent(nodes=nodes)

    @step
    async def synthesize(self, ctx: Context, ev: RetrieverEvent) -> StopEvent:
        synthesizer = get_response_synthesizer(llm=ExtractiveLLM())
        response = await synthesizer.asynthesize(await ctx.store.get("query"), nodes=ev.nodes)
        return StopEvent(result=response)


async def ask(workflow: RAGWorkflow, question: str) -> str:
    return str(await workflow.run(query=question))


def main() -> None:
    spans = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="pets-workflow", exporter=spans, judge="local")
    llamaindex.instrument(rt.tracer_provider)

    index = build_index()
    workflow = RAGWorkflow(index, timeout=30)
    print("answer:", asyncio.run(ask(workflow, "Why do cats like boxes?")))

    rt.force_flush(timeout_s=15)
    print_scores(spans)
    llamaindex.uninstrument()
    rt.shutdown()


if __name__ == "__main__":
    main()
