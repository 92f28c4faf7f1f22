"""An agent's and a workflow's requests reach the scorer whole: the processor holds the
run's root, and the judge gets the user's question, the agent's answer and the
passages retrieved under the run (inside the tool's query engine too)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from llamaindex_agent_fakes import (
    RAGWorkflow,
    answer_for,
    arun,
    function_agent,
    passages_for,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.collectors import llamaindex
from ragas_trace.testing.scripted_judge import ScriptedJudge

QUESTION = "Which cats like boxes?"


def _scored(run: Callable[[], Awaitable[object]]) -> tuple[ScriptedJudge, list]:
    exporter = InMemorySpanExporter()
    judge = ScriptedJudge()
    rt = ragas_trace.setup(judge=judge, tracer_provider=TracerProvider(), exporter=exporter)
    installation = llamaindex.instrument(tracer_provider=rt.tracer_provider)
    try:
        arun(run)
        assert rt.force_flush(timeout_s=10)
    finally:
        installation.uninstrument()
        rt.shutdown(timeout_s=5)
    return judge, list(exporter.get_finished_spans())


def test_an_agent_request_is_scored_on_its_tool_passages() -> None:
    judge, spans = _scored(lambda: function_agent(lookups=2).run(user_msg=QUESTION))

    [root] = [s for s in spans if s.parent is None and s.name == "FunctionAgent.run"]
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert judge.questions == [QUESTION]
    assert root.attributes[sc.OUTPUT_VALUE] == answer_for(QUESTION)
    [contexts] = judge.contexts
    assert set(contexts) == passages_for(QUESTION, lookups=2)


@pytest.mark.parametrize("result", ["response", "dict"])
def test_a_workflow_request_is_scored(result: str) -> None:
    judge, spans = _scored(lambda: RAGWorkflow(result=result).run(query=QUESTION))

    [root] = [s for s in spans if s.parent is None and s.name == "RAGWorkflow.run"]
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert judge.questions == [QUESTION]
    assert len(judge.contexts[0]) == 2
