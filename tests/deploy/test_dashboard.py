import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_kit import (
    DEPLOY,
    EXPORTED_SERIES,
    RULES,
    load_yaml,
    metric_names,
    recorded_names,
    run_promtool,
)

DASHBOARD = DEPLOY / "grafana" / "dashboards" / "ragas-trace.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "datasources.yaml"
# What Grafana substitutes before a query reaches Prometheus.
_GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "1m", "$app": ".*", "$judge": ".*"}


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


def _promql() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in _panels() for t in p.get("targets", [])
            if p["datasource"]["type"] == "prometheus"]


def _substitute(expr: str) -> str:
    return re.sub(r"\$\w+", lambda m: _GRAFANA_VARS[m.group()], expr)


def test_dashboard_is_provisioning_ready() -> None:
    dash = _dashboard()
    assert dash["uid"] == "ragas-trace" and dash["title"]
    assert "id" not in dash or dash["id"] is None  # an id would clash on import
    provisioned = {d["uid"]: d["type"] for d in load_yaml(DATASOURCES)["datasources"]}
    for panel in _panels():
        ds = panel["datasource"]
        assert provisioned.get(ds["uid"]) == ds["type"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == ds, panel["title"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))


def test_panels_do_not_overlap() -> None:
    cells: set[tuple[int, int]] = set()
    for panel in _dashboard()["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, panel["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, panel["title"]
        cells |= mine


def _recorded() -> set[str]:
    return {r["record"] for g in load_yaml(RULES)["groups"] for r in g["rules"] if "record" in r}


def test_queries_read_only_exported_metrics_and_recorded_rules() -> None:
    used: set[str] = set()
    for title, expr in _promql():
        names, recorded = metric_names(expr), recorded_names(expr)
        assert names or recorded, title
        assert names <= EXPORTED_SERIES, (title, names - EXPORTED_SERIES)
        assert recorded <= _recorded(), (title, recorded - _recorded())
        used |= names
    for variable in _dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            assert metric_names(variable["definition"]) <= EXPORTED_SERIES
    # score trends and pass rates for all three metrics, status, scorer health
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        assert f"ragas_{metric}_sum" in used
    assert {"ragas_faithfulness_bucket", "ragas_verdicts_total"} <= used
    assert {"ragas_evaluations_total", "ragas_scorer_dropped_total", "ragas_held_spans",
            "ragas_scorer_queue_size"} <= used


def test_the_alert_panel_plots_what_the_pages_read() -> None:
    alerting = next(p for p in _panels() if "standard errors" in p["title"])
    plotted = {n for t in alerting["targets"] for n in recorded_names(t["expr"])}
    assert plotted == {"ragas:faithfulness_drop_z", "ragas:faithfulness_low_z",
                       "ragas:faithfulness_fail_z"}
    steps = alerting["fieldConfig"]["defaults"]["thresholds"]["steps"]
    shown = {f"> {s['value']:g}" for s in steps if s["value"] is not None}
    pages = [r for g in load_yaml(RULES)["groups"] for r in g["rules"]
             if r.get("labels", {}).get("severity") == "page"]
    assert {r["alert"] for r in pages} == {"RagasFaithfulnessDrop", "RagasFaithfulnessLow",
                                           "RagasFaithfulnessFailRate"}
    # Each page is one plotted signal against the line drawn, nothing else.
    for page in pages:
        assert any(page["expr"] == f"{signal} {line}" for signal in plotted for line in shown), \
            page["alert"]
    for panel in _panels():
        for target in panel.get("targets", []):
            for grouping in re.findall(r"by \(([^)]*)\)", target.get("expr", "")):
                labels = {g.strip() for g in grouping.split(",")}
                if "app" in labels:
                    assert {"service", "app", "judge"} <= labels, panel["title"]


def _scrape_of(faithfulness: list[float], thresholds: dict[str, float]) -> str:
    """What the library's endpoint serves after scoring these faithfulness scores with
    these pass thresholds (the real metrics code and the OpenTelemetry exporter)."""
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from prometheus_client import CollectorRegistry, generate_latest

    from ragas_trace.exporters.metrics import ScorerMetrics
    from ragas_trace.results import Metric, MetricResult, Scores
    from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    metrics = ScorerMetrics(provider, "ragas-trace-demo")
    for value in faithfulness:
        scores = Scores("local", {Metric.FAITHFULNESS: MetricResult.scored(value)})
        metrics.evaluation(Outcome(EvaluationStatus.SCORED, scores), "marrowick-guide",
                           "local", thresholds)
    text = generate_latest(registry).decode()
    provider.shutdown()
    return text


def _panel_value(promtool: str, tmp_path: Path, expr: str, scrape: str) -> dict[str, float]:
    """What Prometheus computes for a panel's query once the scraped counters have
    grown from 0 to their scraped values in a minute (``promtool test rules``)."""
    from prometheus_client.parser import text_string_to_metric_families

    series = [
        {"series": sample.name + "{" + ",".join(
            f'{k}="{v}"' for k, v in sorted(sample.labels.items())
            if not k.startswith("otel_scope")) + "}",
         "values": f"0 {sample.value:g}"}
        for family in text_string_to_metric_families(scrape) for sample in family.samples
        if sample.name.startswith("ragas_verdicts_total") or
        sample.name.startswith("ragas_faithfulness_")]
    record = {"groups": [{"name": "panel", "rules": [{"record": "panel:value", "expr": expr}]}]}
    (tmp_path / "panel.yml").write_text(yaml.safe_dump(record), encoding="utf-8")
    # An expectation that cannot hold: promtool's failure message prints the values.
    test = {"rule_files": ["panel.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "promql_expr_test": [{"expr": "panel:value", "eval_time": "1m", "exp_samples": []}]}]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test), encoding="utf-8")
    done = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    found = re.findall(r'(\{__name__="panel:value"[^}]*\}) ([0-9.eE+-]+)', output)
    assert found, output
    return {labels: float(value) for labels, value in found}


def _pass_rate_expr(metric: str) -> str:
    title = {"faithfulness": "Faithfulness", "answer_relevance": "Answer relevance",
             "context_relevance": "Context relevance"}[metric]
    panel = next(p for p in _panels() if p["title"] == f"{title} pass rate")
    [target] = panel["targets"]
    return _substitute(target["expr"]).replace("[1m]", "[2m]")


def test_pass_rates_follow_the_judge_that_scored(promtool: str, tmp_path: Path) -> None:
    # The demo's scores from the shipped local judge (derived by
    # tools/derive_alert_scores.py), passed or failed by that judge's own thresholds as
    # the spans' labels are: the panel reads exactly that share, and the demo's healthy
    # traffic reads as passing; its hallucinated answers do not.
    from ragas_trace.alerting import load_scores
    from ragas_trace.demo.recording import RecordingJudge
    from ragas_trace.judges.local import LocalJudge

    judge = LocalJudge()
    thresholds = RecordingJudge(judge).thresholds  # what the demo labels its spans by
    assert thresholds["faithfulness"] == judge.thresholds["faithfulness"]
    healthy, bad = load_scores(None, "healthy"), load_scores(None, "bad")
    rates = {}
    for name, scores in (("healthy", healthy), ("bad", bad)):
        [rate] = _panel_value(promtool, tmp_path, _pass_rate_expr("faithfulness"),
                              _scrape_of(list(scores), thresholds)).values()
        passed = sum(value >= thresholds["faithfulness"] for value in scores)
        assert abs(rate - passed / len(scores)) < 1e-9
        rates[name] = rate
    # The demo's default traffic hallucinates one answer in ten by design: a pass rate
    # near 0.9 is what a healthy app looks like to a judge that catches them.
    assert rates["healthy"] >= 0.75, rates
    assert rates["bad"] < rates["healthy"] - 0.3, rates


def test_every_promql_query_parses(promtool: str, tmp_path: Path) -> None:
    # promtool has no expression checker; a recording rule per query makes it parse them.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": _substitute(expr)}
        for i, (_, expr) in enumerate(_promql())
    ]}]}
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    run_promtool(promtool, "check", "rules", str(path))


@pytest.mark.parametrize("query", ['{ span.ragas.faithfulness.label = "fail" }'])
def test_tempo_panel_lists_worst_traces_with_traceql(query: str) -> None:
    tempo = [p for p in _panels() if p["datasource"]["type"] == "tempo"]
    assert [t["query"] for p in tempo for t in p["targets"]] == [query]
    assert tempo[0]["targets"][0]["queryType"] == "traceql"


def test_score_panels_show_exemplars_that_open_the_trace() -> None:
    # Exemplars live on the score histograms' buckets (exporters.prometheus_exemplars),
    # labelled trace_id: a target asking for them must read a _bucket series, and the
    # Prometheus data source must send trace_id to a provisioned trace store.
    with_exemplars = [(p["title"], t["expr"]) for p in _panels() for t in p.get("targets", [])
                      if t.get("exemplar")]
    titles = {title for title, _ in with_exemplars}
    assert {"Faithfulness quantiles", "Faithfulness by answering model"} <= titles
    for title, expr in with_exemplars:
        assert metric_names(expr) == {"ragas_faithfulness_bucket"}, title
    datasources = load_yaml(DATASOURCES)["datasources"]
    types = {d["uid"]: d["type"] for d in datasources}
    [prometheus] = [d for d in datasources if d["type"] == "prometheus"]
    destinations = prometheus["jsonData"]["exemplarTraceIdDestinations"]
    assert {d["name"] for d in destinations} == {"trace_id"}
    assert {types[d["datasourceUid"]] for d in destinations} == {"tempo", "jaeger"}


def test_a_panel_reads_the_scores_by_model() -> None:
    panel = next(p for p in _panels() if p["title"] == "Faithfulness by answering model")
    for target in panel["targets"]:
        for grouping in re.findall(r"by \(([^)]*)\)", target["expr"]):
            assert "model" in {g.strip() for g in grouping.split(",")}
        assert "{{model}}" in target["legendFormat"]
    assert {n for t in panel["targets"] for n in metric_names(t["expr"])} == {
        "ragas_faithfulness_bucket", "ragas_verdicts_total"}
