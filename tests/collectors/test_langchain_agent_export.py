"""An agent through ``setup()`` and ``instrument()`` with the local judge: scored on
the way out, the content policy applied to LLM messages and tool input/output, and
the requests the judge cannot score counted by reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import agent_fakes as apps
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from span_checks import by_kind, one

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import instrument, uninstrument
from ragas_trace.exporters.evaluation_span import SPAN_NAME


class Exported:
    def __init__(self, rt: Any, exporter: InMemorySpanExporter,
                 reader: InMemoryMetricReader) -> None:
        self.rt, self.exporter, self.reader = rt, exporter, reader

    def spans(self) -> tuple[ReadableSpan, ...]:
        assert self.rt.force_flush(timeout_s=30)
        return self.exporter.get_finished_spans()

    def unscored(self) -> dict[str, int]:
        data = self.reader.get_metrics_data()
        return {str(p.attributes["reason"]): int(p.value)
                for r in (data.resource_metrics if data else ()) for s in r.scope_metrics
                for m in s.metrics if m.name == "ragas.faithfulness.unscored"
                for p in m.data.data_points}


@pytest.fixture
def export() -> Iterator[Any]:
    made: list[Any] = []

    def make(**settings: Any) -> Exported:
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        rt = ragas_trace.setup(service_name="agents", judge="local", exporter=exporter,
                               tracer_provider=TracerProvider(),
                               meter_provider=MeterProvider(metric_readers=[reader]),
                               **settings)
        made.append(rt)
        instrument(rt.tracer_provider)  # the only line the app adds
        return Exported(rt, exporter, reader)

    yield make
    uninstrument()
    for rt in made:
        assert rt.shutdown(timeout_s=10)


def root_of(spans: tuple[ReadableSpan, ...]) -> ReadableSpan:
    (root,) = [s for s in spans if s.name == "LangGraph"]
    return root


def test_agent_is_scored_by_the_local_judge(export: Any) -> None:
    out = export()
    apps.rag_agent().invoke(apps.messages_input(),
                            {"configurable": {"thread_id": "user-42"}})

    spans = out.spans()
    root = root_of(spans)
    attrs = root.attributes
    assert attrs[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert sc.RAGAS_EVALUATION_REASON not in attrs
    for metric in (sc.RAGAS_FAITHFULNESS, sc.RAGAS_ANSWER_RELEVANCE, sc.RAGAS_CONTEXT_RELEVANCE):
        assert 0.0 <= attrs[metric] <= 1.0
    assert attrs[sc.RAGAS_FAITHFULNESS] >= 0.5  # the answer quotes the passage
    assert attrs[sc.SESSION_ID] == "user-42"
    assert [s.name for s in spans].count("LangGraph") == 1
    assert len(by_kind(spans, sc.KIND_TOOL)) == 1 and len(by_kind(spans, sc.KIND_LLM)) == 2
    assert one(spans, sc.KIND_RETRIEVER).context.trace_id == root.context.trace_id
    assert len([s for s in spans if s.name == SPAN_NAME]) == 1
    assert out.unscored() == {}


def test_an_agent_that_retrieves_nothing_is_counted_no_context(export: Any) -> None:
    out = export()
    apps.create_agent(apps.ScriptedAgentModel(answer_directly=True), tools=[]).invoke(
        apps.messages_input())

    attrs = root_of(out.spans()).attributes
    assert attrs[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert attrs[sc.RAGAS_EVALUATION_REASON] == "no_context"
    assert attrs[sc.metric_status_attribute("faithfulness")] == "no_context"
    assert out.unscored() == {"no_context": 1}


def test_a_graph_whose_question_is_not_found_is_unscorable(export: Any) -> None:
    from langgraph.graph import START, StateGraph
    from typing_extensions import TypedDict

    class Ticket(TypedDict, total=False):
        ticket_body: str
        reply: str

    def reply(state: Ticket) -> dict[str, Any]:
        return {"reply": "We will look into it."}

    graph = StateGraph(Ticket)
    graph.add_node(reply)
    graph.add_edge(START, "reply")
    out = export()
    graph.compile().invoke({"ticket_body": "My order is late."})

    attrs = root_of(out.spans()).attributes
    assert attrs[sc.RAGAS_EVALUATION_STATUS] == "unscorable"
    assert attrs[sc.RAGAS_EVALUATION_REASON] == "no_question"
    assert out.unscored() == {"no_question": 1}


def message_contents(spans: tuple[ReadableSpan, ...]) -> list[Any]:
    return [v for s in by_kind(spans, sc.KIND_LLM) for k, v in s.attributes.items()
            if k.startswith("llm.") and k.endswith("message.content")]


def test_drop_removes_messages_and_tool_io_but_the_judge_still_scores(export: Any) -> None:
    out = export(content="drop")
    apps.rag_agent().invoke(apps.messages_input())

    spans = out.spans()
    for span in by_kind(spans, sc.KIND_LLM):
        assert not [k for k in span.attributes if k.startswith(("llm.input_messages",
                                                                "llm.output_messages"))]
        assert span.attributes[sc.LLM_MODEL_NAME] == "scripted-1"
    tool = one(spans, sc.KIND_TOOL)
    assert sc.INPUT_VALUE not in tool.attributes and sc.OUTPUT_VALUE not in tool.attributes
    assert tool.attributes[sc.TOOL_NAME] == "retrieve_context"
    root = root_of(spans).attributes
    assert sc.INPUT_VALUE not in root
    assert root[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert sc.RAGAS_FAITHFULNESS in root


def test_redact_and_size_limit_apply_to_messages(export: Any) -> None:
    out = export(content="redact", redact=lambda text: text.replace("city3", "[city]"),
                 max_content_chars=12)
    apps.rag_agent().invoke(apps.messages_input())

    contents = [c for c in message_contents(out.spans()) if c]
    assert contents
    assert all("city3" not in c and len(c) <= 12 for c in contents)
    assert "Where does [" in contents
    arguments = [v for s in by_kind(out.spans(), sc.KIND_LLM) for k, v in s.attributes.items()
                 if k.endswith(sc.TOOL_CALL_FUNCTION_ARGUMENTS)]
    assert arguments and all("city3" not in a and len(a) <= 12 for a in arguments)
