"""The Prometheus names G's rules and dashboard read, scraped from our own endpoint."""

from __future__ import annotations

import threading
import urllib.request

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

SCORE_SERIES = {f"ragas_{m}_{suffix}" for m in ("faithfulness", "answer_relevance",
                                                "context_relevance")
                for suffix in ("bucket", "sum", "count")}


def samples(port: int, primed: bool = True) -> dict[str, list[dict[str, str]]]:
    """The scraped samples; ``primed=False`` leaves out the zeros of labelled series
    (those created at zero before their first value: the setting's app at
    ``setup()``, a model when first seen)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not primed and "app" in sample.labels and sample.value == 0:
                continue
            labels = {k: v for k, v in sample.labels.items() if not k.startswith("otel_scope")}
            out.setdefault(sample.name, []).append({**labels, "value": str(sample.value)})
    return out


def test_prometheus_names_and_labels():
    gate = threading.Event()
    judge = ScriptedJudge(0.8, gate=gate)
    rt = ragas_trace.setup(service_name="svc", judge=judge, metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=InMemorySpanExporter(), max_held_spans=1)
    try:
        tracer = rt.tracer_provider.get_tracer("t")
        rag_request(tracer)  # held, judge gated
        rag_request(tracer)  # hold buffer full: dropped
        port = rt.metrics_port
        assert port is not None
        assert samples(port)["ragas_held_spans"] == [{"value": "1.0"}]
        gate.set()
        assert rt.force_flush(timeout_s=10)
        found = samples(port)
    finally:
        rt.shutdown(timeout_s=5)
    assert set(found) >= SCORE_SERIES
    scored = [s for s in found["ragas_faithfulness_count"] if s["value"] != "0.0"]
    assert [{k: v for k, v in s.items() if k != "model"} for s in scored] == [
        {"service": "svc", "app": "test-app", "judge": "scripted", "value": "1.0"}]
    # The setting's app ("unknown" without one) was created at zero by setup(); the
    # exporter writes an absent label as "" (which Prometheus reads as absent).
    assert {"service": "svc", "app": "unknown", "judge": "scripted", "model": "",
            "value": "0.0"} in found["ragas_faithfulness_count"]
    statuses = {s["status"] for s in found["ragas_evaluations_total"] if s["value"] != "0.0"}
    assert statuses == {"scored", "dropped"}
    assert {"service", "app", "judge", "status"} <= set(found["ragas_evaluations_total"][0])
    assert found["ragas_scorer_dropped_total"] == [{"reason": "hold_full", "value": "1.0"}]
    per_metric = {(s["metric"], s["status"]): float(s["value"])
                  for s in found["ragas_metric_evaluations_total"]}
    assert per_metric == {(m, status): 1.0 for m in ("faithfulness", "answer_relevance",
                                                     "context_relevance")
                          for status in ("scored", "dropped")}
    assert found["ragas_held_spans"] == [{"value": "0.0"}]
    assert "ragas_held_spans" in found and "ragas_scorer_queue_size" in found
    assert {s["type"] for s in found["ragas_judge_tokens_bucket"]} == {"prompt", "completion"}
    # A judge that names no model costs nothing, and says so under the dashboard's name.
    assert found["ragas_judge_cost_usd_total"] == [
        {"service": "svc", "app": "test-app", "judge": "scripted", "value": "0.0"}]
    assert "ragas_judge_duration_seconds_bucket" in found
    assert {s["judge"] for s in found["ragas_judge_duration_seconds_count"]} == {"scripted"}


def test_export_loss_is_scraped_by_reason():
    from collections.abc import Sequence

    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class DownExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.FAILURE

    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=DownExporter(), handle_sigterm=False)
    try:
        rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(timeout_s=10) is False
        port = rt.metrics_port
        assert port is not None
        found = samples(port, primed=False)
    finally:
        assert rt.shutdown(timeout_s=5) is False  # the final account: still a loss
    # root, retriever, LLM and the evaluation span
    assert found["ragas_export_lost_total"] == [
        {"signal": "traces", "reason": "export_failed", "value": "4.0"}]


def test_faithfulness_squares_give_the_variance_the_alert_rules_read():
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(0.8), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=InMemorySpanExporter())
    try:
        tracer = rt.tracer_provider.get_tracer("t")
        rag_request(tracer)
        rag_request(tracer)
        assert rt.force_flush(timeout_s=10)
        port = rt.metrics_port
        assert port is not None
        found = samples(port, primed=False)
    finally:
        rt.shutdown(timeout_s=5)
    [squares] = found["ragas_faithfulness_squares_total"]
    assert {"service": "svc", "app": "test-app", "judge": "scripted"}.items() <= squares.items()
    assert abs(float(squares["value"]) - 2 * 0.8 * 0.8) < 1e-9
    [count] = found["ragas_faithfulness_count"]
    [total] = found["ragas_faithfulness_sum"]
    mean = float(total["value"]) / float(count["value"])
    assert abs(float(squares["value"]) / float(count["value"]) - mean**2) < 1e-9


def test_app_label_values_are_capped_and_the_rest_counted(caplog, monkeypatch):
    # Every request names its own app (a run_name per request, or any sender's span
    # names): the first max_app_labels keep their series, the rest fold into "other".
    # The burst outruns the export worker on a busy machine; the bounded export queue
    # would drop spans (counted, as it should), which is not what this test is about.
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "100000")
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(0.8), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=InMemorySpanExporter(), max_held_spans=5000,
                           queue_size=5000)
    try:
        tracer = rt.tracer_provider.get_tracer("t")
        for i in range(5000):
            rag_request(tracer, root_attributes={sc.RAGAS_APP_NAME: f"app-{i}"})
        assert rt.force_flush(timeout_s=60)
        port = rt.metrics_port
        assert port is not None
        found = samples(port)
    finally:
        rt.shutdown(timeout_s=5)
    evaluations = found["ragas_evaluations_total"]
    apps = {s["app"] for s in evaluations}
    # "unknown" (the setting's app, created at zero by setup()) holds one of the 100.
    assert len(apps) == 101 and {"other", "app-0", "unknown"} <= apps
    assert sum(float(s["value"]) for s in evaluations) == 5000
    assert {s["app"] for s in found["ragas_faithfulness_count"]} == apps
    # Each request's fold is counted once, whatever its model label did.
    assert {"label": "app", "value": "4901.0"} in found["ragas_metrics_folded_labels_total"]
    assert sum("more than 100 distinct 'app' label values" in r.message
               for r in caplog.records) == 1


def test_5000_run_names_in_process_give_one_app_label(rag_chain):
    # LangChain run names (often one per request) stay span names; the label is the
    # app_name setting, as no handler named the app.
    exporter = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(0.8), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=exporter, max_held_spans=5000, queue_size=5000,
                           app_name="support-bot")
    try:
        handler = rt.langchain_handler()
        for i in range(5000):
            rag_chain.invoke("What is the capital of France?",
                             config={"callbacks": [handler], "run_name": f"run-{i}"})
        assert rt.force_flush(timeout_s=60)
        port = rt.metrics_port
        assert port is not None
        found = samples(port, primed=False)
    finally:
        rt.shutdown(timeout_s=5)
    evaluations = found["ragas_evaluations_total"]
    assert {s["app"] for s in evaluations} == {"support-bot"}
    assert sum(float(s["value"]) for s in evaluations) == 5000
    assert {s["app"] for s in found["ragas_faithfulness_count"]} == {"support-bot"}
    assert "ragas_metrics_folded_labels_total" not in found
    roots = [s for s in exporter.get_finished_spans() if s.name.startswith("run-")]
    assert len({s.name for s in roots}) == 5000
    assert all(sc.RAGAS_APP_NAME not in (s.attributes or {}) for s in roots)


def test_each_metric_of_each_request_is_counted_once_by_status():
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from ragas_trace.exporters.metrics import ScorerMetrics
    from ragas_trace.results import JudgeUsage, Metric, MetricResult, MetricStatus, Scores
    from ragas_trace.scorer.outcome import EvaluationStatus, Outcome, outcome_of

    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    refusal = Scores("j", {Metric.FAITHFULNESS: MetricResult.unscored(MetricStatus.NO_STATEMENTS),
                           Metric.ANSWER_RELEVANCE: MetricResult.scored(0.7)}, JudgeUsage())
    timed_out = Scores("j", {m: MetricResult.unscored(MetricStatus.TIMEOUT) for m in Metric},
                       JudgeUsage())
    metrics.evaluation(outcome_of(refusal, 0.1), "faq", "j")
    metrics.evaluation(outcome_of(timed_out, 0.1), "faq", "j")
    metrics.evaluation(Outcome(EvaluationStatus.FAILED, reason="internal_error"), "faq", "j")
    metrics.not_scored(EvaluationStatus.NOT_SAMPLED, "faq", "j")
    metrics.not_scored(EvaluationStatus.DROPPED, "faq", "j")
    metrics.not_scored(EvaluationStatus.UNSCORABLE, "faq", "j")

    data = reader.get_metrics_data()
    assert data is not None
    points = {m.name: m.data.data_points for rm in data.resource_metrics
              for sm in rm.scope_metrics for m in sm.metrics}
    requests = sum(p.value for p in points["ragas.evaluations"])
    per_metric: dict[str, dict[str, int]] = {}
    for p in points["ragas.metric.evaluations"]:
        attrs = dict(p.attributes or {})
        per_metric.setdefault(str(attrs["metric"]), {})[str(attrs["status"])] = int(p.value)
    assert requests == 6
    for metric in Metric:
        assert sum(per_metric[str(metric)].values()) == requests, per_metric
    assert per_metric["faithfulness"] == {"no_statements": 1, "timeout": 1, "failed": 1,
                                          "not_sampled": 1, "dropped": 1, "unscorable": 1}
    assert per_metric["answer_relevance"]["scored"] == 1
    assert per_metric["context_relevance"]["skipped"] == 1  # the judge was not asked


def test_a_swallowed_internal_error_is_scraped_by_place(monkeypatch):
    from ragas_trace._internal_errors import internal_error_counts

    monkeypatch.setenv("RAGAS_TRACE_RAISE_INTERNAL_ERRORS", "0")  # as in production
    spans = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=spans, handle_sigterm=False)
    before = internal_error_counts().get("processor.on_end", 0)

    def broken(span: object) -> None:
        raise RuntimeError("a bug of ours")

    try:
        monkeypatch.setattr(rt.pipeline.processor, "_ended", broken)
        rag_request(rt.tracer_provider.get_tracer("t"))
        port = rt.metrics_port
        assert port is not None
        found = samples(port, primed=False)
    finally:
        monkeypatch.undo()
        rt.shutdown(timeout_s=5)
    errors = {s["where"]: float(s["value"]) for s in found["ragas_internal_errors_total"]}
    assert errors["processor.on_end"] == before + 3  # root, retriever and LLM spans
    assert len(spans.get_finished_spans()) == 3  # swallowed: every span still exported
