"""A request whose question, passages or answer were not captured is visible: it gets
an evaluation status and reason, and ``ragas_faithfulness_unscored_total`` counts it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_metrics import samples

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.collectors import _attributes as at
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.results import ALL_METRICS, Metric, MetricResult, MetricStatus, Scores
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge


class InputCheckingJudge(ScriptedJudge):
    """Scores like ``ScriptedJudge``, but, as the real judges do, gives a metric whose
    inputs are missing the status that says which one."""

    _NEEDS: ClassVar[dict[Metric, tuple[str, str]]] = {
        Metric.FAITHFULNESS: ("answer", "contexts"),
        Metric.ANSWER_RELEVANCE: ("question", "answer"),
        Metric.CONTEXT_RELEVANCE: ("question", "contexts")}
    _STATUS: ClassVar[dict[str, MetricStatus]] = {
        "question": MetricStatus.NO_QUESTION, "answer": MetricStatus.NO_ANSWER,
        "contexts": MetricStatus.NO_CONTEXT}

    async def evaluate(self, question: str | None, contexts: Sequence[str], answer: str | None,
                       metrics: frozenset[Metric] = ALL_METRICS) -> Scores:
        scores = await super().evaluate(question, contexts, answer, metrics)
        given = {"question": question, "answer": answer, "contexts": contexts}
        results = dict(scores.results)
        for metric in metrics:
            missing = [n for n in self._NEEDS[metric] if not given[n]]
            if missing:
                results[metric] = MetricResult.unscored(self._STATUS[missing[0]])
        return Scores(scores.judge, results, usage=scores.usage)


def unscored_counts(reader: InMemoryMetricReader) -> dict[str, int]:
    data = reader.get_metrics_data()
    out: dict[str, int] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "ragas.faithfulness.unscored":
                    for point in metric.data.data_points:
                        attrs: Any = point.attributes
                        assert set(attrs) == {"service", "app", "judge", "reason"}
                        out[attrs["reason"]] = point.value
    return out


def make_counted_rig(make_rig: Any) -> tuple[Any, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    return make_rig(InputCheckingJudge(), metrics=metrics), reader


def test_a_root_without_a_question_is_unscorable_and_counted(make_rig: Any) -> None:
    rig, reader = make_counted_rig(make_rig)
    with rig.tracer.start_as_current_span("LangGraph", attributes=dict(
            at.chain_attributes("LangGraph", "langchain", None))):
        with rig.tracer.start_as_current_span("retriever",
                                              attributes=dict(at.retriever_attributes())):
            pass
    assert rig.processor.force_flush(5000)

    root = rig.named("LangGraph")[0].attributes
    assert root[sc.RAGAS_EVALUATION_STATUS] == "unscorable"
    assert root[sc.RAGAS_EVALUATION_REASON] == "no_question"
    assert rig.judge.calls == 0
    assert unscored_counts(reader) == {"no_question": 1}


def test_scored_without_passages_says_no_context_and_is_counted(make_rig: Any) -> None:
    rig, reader = make_counted_rig(make_rig)
    rag_request(rig.tracer, docs=())
    rag_request(rig.tracer)  # a complete one: scored, not counted
    assert rig.processor.force_flush(5000)

    gap, full = (s.attributes for s in rig.named("rag"))
    assert gap[sc.RAGAS_EVALUATION_STATUS] == "scored"  # answer relevance has a value
    assert gap[sc.RAGAS_EVALUATION_REASON] == "no_context"
    assert gap[sc.metric_status_attribute("faithfulness")] == "no_context"
    assert sc.RAGAS_FAITHFULNESS not in gap and sc.RAGAS_ANSWER_RELEVANCE in gap
    assert full[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert sc.RAGAS_EVALUATION_REASON not in full
    assert unscored_counts(reader) == {"no_context": 1}


def test_a_root_without_an_answer_says_no_answer(make_rig: Any) -> None:
    rig, reader = make_counted_rig(make_rig)
    with rig.tracer.start_as_current_span("agent", attributes={
            **dict(at.chain_attributes("agent", "langchain", None)),
            **dict(at.input_attributes("What is the capital of France?"))}):
        with rig.tracer.start_as_current_span("retriever", attributes=dict(
                at.retriever_attributes())) as retriever:
            retriever.set_attributes(dict(at.document_attributes(0, "Paris is in France.")))
    assert rig.processor.force_flush(5000)

    root = rig.named("agent")[0].attributes
    assert root[sc.RAGAS_EVALUATION_STATUS] == "scored"  # context relevance
    assert root[sc.RAGAS_EVALUATION_REASON] == "no_answer"
    assert unscored_counts(reader) == {"no_answer": 1}


def test_judge_failures_are_counted_as_failed(make_rig: Any) -> None:
    reader = InMemoryMetricReader()
    rig = make_rig(ScriptedJudge(mode="fail"),
                   metrics=ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc"))
    rag_request(rig.tracer)
    assert rig.processor.force_flush(5000)
    assert unscored_counts(reader) == {"failed": 1}


def test_the_counter_reaches_prometheus_by_that_name() -> None:
    rt = ragas_trace.setup(service_name="svc", judge=InputCheckingJudge(), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=InMemorySpanExporter())
    try:
        rag_request(rt.tracer_provider.get_tracer("t"), docs=())
        assert rt.force_flush(timeout_s=10)
        assert rt.metrics_port is not None
        found = samples(rt.metrics_port)
    finally:
        rt.shutdown(timeout_s=5)
    assert found["ragas_faithfulness_unscored_total"] == [{
        "service": "svc", "app": "test-app", "judge": "scripted", "reason": "no_context",
        "value": "1.0"}]
