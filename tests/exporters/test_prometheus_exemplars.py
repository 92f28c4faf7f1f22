"""Exemplars, the ``model`` label and series created at zero, scraped from our own
endpoint (``setup(metrics_port=0)``) and read over an in-memory OTLP-style reader."""

from __future__ import annotations

import re
import urllib.request

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.openmetrics.parser import text_string_to_metric_families

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.exporters import metrics as scorer_metrics
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.multiprocess_metrics import MultiprocessMeterProvider
from ragas_trace.exporters.series_at_zero import create_at_zero
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


@pytest.fixture(autouse=True)
def model_label_at_once(monkeypatch):
    """A model's label from its first score (its wait is tested on its own below)."""
    monkeypatch.setattr(scorer_metrics, "MODEL_LABEL_DELAY_S", 0.0)


def scrape(port: int, accept: str | None = None) -> str:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=5) as response:
        return str(response.read().decode())


def test_openmetrics_scrape_carries_the_evaluated_roots_trace_ids_and_the_model():
    exporter = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(0.25), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=exporter)
    try:
        tracer = rt.tracer_provider.get_tracer("t")
        for _ in range(3):
            rag_request(tracer)
        assert rt.force_flush(timeout_s=10)
        port = rt.metrics_port
        assert port is not None
        openmetrics, plain = scrape(port, OPENMETRICS), scrape(port)
        again = scrape(port, OPENMETRICS)
    finally:
        rt.shutdown(timeout_s=5)
    roots = {f"{s.context.trace_id:032x}": f"{s.context.span_id:016x}"
             for s in exporter.get_finished_spans() if s.name == "rag"}
    assert len(roots) == 3
    bucket = re.compile(r'^ragas_faithfulness_bucket\{(.*)\} (\S+) # \{(.*)\} (\S+)', re.M)
    found = bucket.findall(openmetrics)
    assert found, openmetrics
    for labels, _count, exemplar, value in found:
        assert 'model="m"' in labels and 'app="test-app"' in labels
        assert 'le="0.3"' in labels  # 0.25 falls in the (0.2, 0.3] bucket
        ids = dict(re.findall(r'(\w+)="([0-9a-f]+)"', exemplar))
        assert roots.get(ids["trace_id"]) == ids["span_id"]
        assert float(value) == 0.25
    families = {f.name: f for f in text_string_to_metric_families(openmetrics)}
    scored = [s for s in families["ragas_evaluations"].samples
              if s.name == "ragas_evaluations_total" and s.labels["status"] == "scored"
              and s.value]
    assert [s.exemplar.labels["trace_id"] in roots for s in scored] == [True]
    verdicts = [s for s in families["ragas_verdicts"].samples if s.value]
    assert {s.labels["model"] for s in verdicts} == {"m"}
    # The classic text format has none; a scrape by hand steals none from the next.
    assert " # {" not in plain
    assert bucket.findall(again) == found


def test_model_label_values_are_capped_like_app():
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc", max_apps=2)
    from ragas_trace.results import Metric, MetricResult, Scores
    from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

    scores = Scores("j", {m: MetricResult.scored(0.9) for m in Metric})
    for model in ("a", "b", "c", "d", None):
        metrics.evaluation(Outcome(EvaluationStatus.SCORED, scores), "app", "j", {},
                           model=model)
    data = reader.get_metrics_data()
    assert data is not None
    by_name = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
    counts = {p.attributes.get("model"): p.count
              for p in by_name["ragas.faithfulness"].data.data_points
              if isinstance(p, HistogramDataPoint)}
    assert counts == {"a": 1, "b": 1, "other": 2, None: 1}
    folded = {p.attributes["label"]: p.value
              for p in by_name["ragas.metrics.folded_labels"].data.data_points}
    assert folded == {"model": 2}


def test_setup_creates_the_apps_series_at_zero_before_any_request():
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(0.9), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=InMemorySpanExporter(), app_name="shop")
    try:
        rt.langchain_handler(app_name="support")
        # Made directly, on the same provider: announced all the same.
        from ragas_trace.collectors.langchain import RagasCallbackHandler

        RagasCallbackHandler(tracer_provider=rt.tracer_provider, app_name="billing")
        # On another provider: another pipeline's app, not this one's.
        RagasCallbackHandler(tracer_provider=TracerProvider(), app_name="elsewhere")
        port = rt.metrics_port
        assert port is not None
        text = scrape(port)
    finally:
        rt.shutdown(timeout_s=5)
    assert 'app="elsewhere"' not in text
    for app in ("shop", "support", "billing"):
        labels = f'app="{app}",judge="scripted"'
        for series in ("ragas_faithfulness_count", "ragas_answer_relevance_count",
                       "ragas_faithfulness_squares_total"):
            assert re.search(rf"^{series}\{{{labels}.*\}} 0\.0$", text, re.M), (series, text)
        assert re.search(rf'^ragas_faithfulness_bucket\{{{labels}.*le="0.5".*\}} 0\.0$', text,
                         re.M)
        for status in ("scored", "failed", "timeout", "not_sampled"):
            assert re.search(rf'^ragas_evaluations_total\{{{labels}.*status="{status}".*\}} 0\.0$',
                             text, re.M), status
        assert re.search(rf'^ragas_verdicts_total\{{{labels},label="fail",metric="faithfulness"'
                         rf'.*\}} 0\.0$', text, re.M)


def test_a_models_series_are_created_at_zero_when_it_is_first_seen():
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    metrics.prime("app", "j", model="gpt-x")
    data = reader.get_metrics_data()
    assert data is not None
    points = [(m.name, p) for rm in data.resource_metrics for sm in rm.scope_metrics
              for m in sm.metrics for p in m.data.data_points]
    histograms = {(name, p.attributes["model"]) for name, p in points
                  if isinstance(p, HistogramDataPoint) and p.count == 0}
    assert histograms == {(f"ragas.{m}", "gpt-x") for m in
                          ("faithfulness", "answer_relevance", "context_relevance")}
    verdicts = {(p.attributes["metric"], p.attributes["label"]) for name, p in points
                if name == "ragas.verdicts" and p.value == 0}
    assert len(verdicts) == 6


def test_multiprocess_series_are_created_at_zero_and_no_exemplars_is_said(
        tmp_path, monkeypatch, caplog):
    from prometheus_client import CollectorRegistry, generate_latest, values

    from ragas_trace.exporters import multiprocess_metrics

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setattr(values, "ValueClass", values.MultiProcessValue())
    monkeypatch.setattr(multiprocess_metrics, "_said_no_exemplars", False)
    caplog.set_level("INFO", logger="ragas_trace")
    meter = MultiprocessMeterProvider().get_meter("ragas_trace")
    MultiprocessMeterProvider()
    said = [r for r in caplog.records if "carry no exemplars" in r.message]
    assert len(said) == 1 and said[0].levelname == "INFO"
    histogram = meter.create_histogram("ragas.zero_test", explicit_bucket_boundaries_advisory=[
        0.5])
    assert create_at_zero(histogram, {"app": "a"})
    from ragas_trace.exporters.multiprocess_metrics import MultiprocessCollector

    registry = CollectorRegistry()
    registry.register(MultiprocessCollector(str(tmp_path)))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert 'ragas_zero_test_count{app="a"} 0.0' in text


def test_the_answering_model_is_the_records_model():
    from ragas_trace.extract import extract_record
    from ragas_trace.testing import InMemoryTracing

    tracing = InMemoryTracing()
    rag_request(tracing.tracer, llm_attributes={sc.GEN_AI_RESPONSE_MODEL: "m-2024"})
    record = extract_record(tracing.spans())
    tracing.shutdown()
    assert record is not None and record.model == "m"


def test_a_new_models_first_scores_wait_for_its_series_to_be_scraped_at_zero(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(scorer_metrics, "MODEL_LABEL_DELAY_S", 120.0)
    monkeypatch.setattr(scorer_metrics.time, "monotonic", lambda: clock[0])
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    from ragas_trace.results import Metric, MetricResult, Scores
    from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

    scored = Outcome(EvaluationStatus.SCORED,
                     Scores("j", {m: MetricResult.scored(0.9) for m in Metric}))
    metrics.evaluation(scored, "app", "j", {}, model="gpt-x")
    clock[0] += 119.0
    metrics.evaluation(scored, "app", "j", {}, model="gpt-x")
    clock[0] += 1.0
    metrics.evaluation(scored, "app", "j", {}, model="gpt-x")
    data = reader.get_metrics_data()
    assert data is not None
    counts = {p.attributes.get("model"): p.count for rm in data.resource_metrics
              for sm in rm.scope_metrics for m in sm.metrics if m.name == "ragas.faithfulness"
              for p in m.data.data_points}
    assert counts == {None: 2, "gpt-x": 1}


def test_otlp_metrics_carry_the_evaluated_roots_ids_as_exemplars():
    # What a push reader (OTLP) gets from the SDK: the exemplars ride on the points.
    from opentelemetry.trace import SpanContext

    from ragas_trace.results import Metric, MetricResult, Scores
    from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    scores = Scores("j", {m: MetricResult.scored(0.2) for m in Metric})
    root = SpanContext(0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7, False)
    metrics.evaluation(Outcome(EvaluationStatus.SCORED, scores), "app", "j", {"faithfulness": 0.5},
                       evaluated=root)
    data = reader.get_metrics_data()
    assert data is not None
    by_name = {m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics
               for m in sm.metrics}
    for name in ("ragas.faithfulness", "ragas.answer_relevance", "ragas.verdicts",
                 "ragas.evaluations", "ragas.faithfulness.squares"):
        exemplars = [e for p in by_name[name].data.data_points for e in p.exemplars]
        assert [(e.trace_id, e.span_id) for e in exemplars] == [
            (root.trace_id, root.span_id)] * len(exemplars) and exemplars, name
    # Nothing else is tied to a request.
    assert not [e for p in by_name["ragas.judge.tokens"].data.data_points for e in p.exemplars]
