"""Custom LlamaIndex ``Workflow``s written the way the RAG workflow examples write them:
a retrieve step and a synthesize step. The run is the request's root; its question is
the start event's query, its answer the stop event's result; retrievals in steps are
its passages, and so are nodes a step passes on when no retriever recorded them."""

from __future__ import annotations

import pytest
from llama_index.core.base.response.schema import AsyncStreamingResponse
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.workflow import (
    Context,
    Event,
    StartEvent,
    StopEvent,
    Workflow,
    WorkflowTimeoutError,
    step,
)
from llamaindex_agent_fakes import RAGWorkflow, RetrieverEvent, arun
from llamaindex_fakes import (  # noqa: F401 (the fixture is used by name)
    ANSWER,
    PASSAGES,
    QUESTION,
    ScriptedLLM,
    index,
    tracing_fixture,
)
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from span_checks import by_kind, kinds, one

from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.extract import extract_record
from ragas_trace.testing import InMemoryTracing


class NodesFromStepWorkflow(Workflow):
    """A retrieve step that builds its nodes without a retriever (a vector store
    queried directly, say), then a rerank step that passes some of them on."""

    @step
    def retrieve(self, ev: StartEvent) -> RetrieverEvent:  # a sync step: run in a thread
        return RetrieverEvent(nodes=[
            NodeWithScore(node=TextNode(text=text, id_=f"doc-{i}"), score=1.0 - i / 10)
            for i, text in enumerate(PASSAGES)])

    @step
    async def rerank(self, ev: RetrieverEvent) -> StopEvent:
        kept = ev.nodes[:2]
        response = await MockLLM(max_tokens=3).acomplete(
            "\n".join(n.node.get_content() for n in ev.nodes))
        return StopEvent(result={"response": response.text, "source_nodes": kept})


def _root(spans: list[ReadableSpan]) -> ReadableSpan:
    [root] = [s for s in spans if s.parent is None]
    return root


def test_retrieve_then_synthesize_workflow_is_one_request(tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    result = arun(lambda: RAGWorkflow().run(query=QUESTION))

    assert str(result) == ANSWER
    spans = tracing.spans()
    assert kinds(spans) == [sc.KIND_CHAIN, sc.KIND_LLM, sc.KIND_RETRIEVER]
    root = _root(spans)
    assert root.name == "RAGWorkflow.run"
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER
    retriever = one(spans, sc.KIND_RETRIEVER)
    llm = one(spans, sc.KIND_LLM)
    # Steps get no span of their own: their retriever and LLM hang under the run.
    assert retriever.parent.span_id == llm.parent.span_id == root.context.span_id
    # The nodes the retrieve step passes on are the retriever's: recorded once.
    assert retriever.attributes["ragas.retrieval.documents_total"] == 2
    record = extract_record(spans)
    assert record is not None
    assert (record.question, record.answer) == (QUESTION, ANSWER)
    assert len(record.contexts) == 2 and {c.content for c in record.contexts} <= set(PASSAGES)


@pytest.mark.parametrize("shape", ["str", "dict"])
def test_stop_event_result_as_str_or_dict(tracing: InMemoryTracing, shape: str) -> None:
    llamaindex.instrument(tracing.provider)

    arun(lambda: RAGWorkflow(result=shape).run(query=QUESTION))

    spans = tracing.spans()
    assert _root(spans).attributes[sc.OUTPUT_VALUE] == ANSWER
    assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 1


def test_start_event_subclass_and_stop_event_subclass(tracing: InMemoryTracing) -> None:
    class AskEvent(StartEvent):
        question: str

    class AnswerEvent(StopEvent):
        answer: str

    class Echo(Workflow):
        @step
        async def answer(self, ev: AskEvent) -> AnswerEvent:
            return AnswerEvent(answer=f"You asked: {ev.question}")

    llamaindex.instrument(tracing.provider)

    result = arun(lambda: Echo().run(start_event=AskEvent(question=QUESTION)))

    assert isinstance(result, AnswerEvent)
    root = _root(tracing.spans())
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.attributes[sc.OUTPUT_VALUE] == f"You asked: {QUESTION}"


def test_nodes_a_step_passes_on_are_the_passages_without_a_retriever(
        tracing: InMemoryTracing) -> None:
    llamaindex.instrument(tracing.provider)

    result = arun(lambda: NodesFromStepWorkflow().run(query=QUESTION))

    spans = tracing.spans()
    root = _root(spans)
    assert root.attributes[sc.OUTPUT_VALUE] == result["response"]
    # One RETRIEVER span for the retrieve step's nodes; the rerank step's subset and
    # the result's source nodes are the same passages, not recorded again.
    retriever = one(spans, sc.KIND_RETRIEVER)
    assert retriever.name == "NodesFromStepWorkflow.retrieve"
    assert retriever.parent.span_id == root.context.span_id
    record = extract_record(spans)
    assert record is not None
    assert [c.content for c in record.contexts] == list(PASSAGES)
    assert [c.id for c in record.contexts] == ["doc-0", "doc-1", "doc-2"]


def test_streamed_synthesis_ends_the_request_when_the_stream_does(
        tracing: InMemoryTracing) -> None:
    installation = llamaindex.instrument(tracing.provider)

    async def run() -> str:
        result = await RAGWorkflow(streaming=True).run(query=QUESTION)
        assert isinstance(result, AsyncStreamingResponse)
        assert not tracing.spans()  # the answer is still being generated
        return "".join([token async for token in result.async_response_gen()])

    assert arun(run) == ANSWER
    spans = tracing.spans()
    root = _root(spans)
    assert root.attributes[sc.OUTPUT_VALUE] == ANSWER
    assert root.attributes[sc.RAGAS_STREAM_STATUS] == sc.STREAM_COMPLETED
    assert one(spans, sc.KIND_LLM).parent.span_id == root.context.span_id
    assert installation.open_runs == 0


def test_streamed_workflow_events_give_the_same_request(tracing: InMemoryTracing) -> None:
    class Progress(Event):
        msg: str

    class Reporting(RAGWorkflow):
        @step
        async def retrieve(self, ctx: Context, ev: StartEvent) -> RetrieverEvent | None:
            ctx.write_event_to_stream(Progress(msg="retrieving"))
            return await super().retrieve(ctx, ev)

    llamaindex.instrument(tracing.provider)

    async def run() -> list[str]:
        handler = Reporting().run(query=QUESTION)
        seen = [ev.msg async for ev in handler.stream_events() if isinstance(ev, Progress)]
        await handler
        return seen

    assert arun(run) == ["retrieving"]
    spans = tracing.spans()
    assert _root(spans).attributes[sc.OUTPUT_VALUE] == ANSWER
    assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 1


def test_a_workflow_that_times_out_ends_its_request_with_the_error(
        tracing: InMemoryTracing) -> None:
    import asyncio

    class Slow(Workflow):
        @step
        async def wait(self, ev: StartEvent) -> StopEvent:
            await asyncio.sleep(5)
            return StopEvent(result="late")

    installation = llamaindex.instrument(tracing.provider)

    with pytest.raises(WorkflowTimeoutError):
        arun(lambda: Slow(timeout=0.05).run(query=QUESTION))

    root = _root(tracing.spans())
    assert root.attributes[sc.INPUT_VALUE] == QUESTION
    assert root.status.status_code == StatusCode.ERROR
    assert installation.open_runs == 0


def test_a_query_engine_run_inside_a_step_is_part_of_the_run(tracing: InMemoryTracing) -> None:
    class Wrapper(Workflow):
        @step
        async def ask(self, ev: StartEvent) -> StopEvent:
            engine = index().as_query_engine(llm=ScriptedLLM(), similarity_top_k=2)
            return StopEvent(result=await engine.aquery(ev.get("query")))

    llamaindex.instrument(tracing.provider)

    arun(lambda: Wrapper().run(query=QUESTION))

    spans = tracing.spans()
    assert [s.name for s in by_kind(spans, sc.KIND_CHAIN)] == ["Wrapper.run"]
    assert _root(spans).attributes[sc.OUTPUT_VALUE] == ANSWER
    assert len(by_kind(spans, sc.KIND_RETRIEVER)) == 1
