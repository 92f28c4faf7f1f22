import json
import re
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
_GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "1m", "$app": ".*", "$judge": ".*",
                 "$threshold": "0.7"}


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
        assert {f"ragas_{metric}_sum", f"ragas_{metric}_bucket"} <= used
    assert {"ragas_evaluations_total", "ragas_scorer_dropped_total", "ragas_held_spans",
            "ragas_scorer_queue_size"} <= used


def test_the_alert_panel_plots_what_the_pages_read() -> None:
    alerting = next(p for p in _panels() if "standard errors" in p["title"])
    plotted = {n for t in alerting["targets"] for n in recorded_names(t["expr"])}
    assert plotted == {"ragas:faithfulness_drop_z", "ragas:faithfulness_low_z"}
    steps = alerting["fieldConfig"]["defaults"]["thresholds"]["steps"]
    shown = {f"> {s['value']:g}" for s in steps if s["value"] is not None}
    pages = [r for g in load_yaml(RULES)["groups"] for r in g["rules"]
             if r.get("labels", {}).get("severity") == "page"]
    assert {r["alert"] for r in pages} == {"RagasFaithfulnessDrop", "RagasFaithfulnessLow"}
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


def test_pass_rate_thresholds_are_histogram_bucket_bounds() -> None:
    from ragas_trace.exporters.metrics import SCORE_BUCKETS

    threshold = next(v for v in _dashboard()["templating"]["list"] if v["name"] == "threshold")
    assert {float(o["value"]) for o in threshold["options"]} <= set(SCORE_BUCKETS)


def test_every_promql_query_parses(promtool: str, tmp_path: Path) -> None:
    # promtool has no expression checker; a recording rule per query makes it parse them.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": _substitute(expr)}
        for i, (_, expr) in enumerate(_promql())
    ]}]}
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    run_promtool(promtool, "check", "rules", str(path))


@pytest.mark.parametrize("query", ["{ span.ragas.faithfulness < 0.5 }"])
def test_tempo_panel_lists_worst_traces_with_traceql(query: str) -> None:
    tempo = [p for p in _panels() if p["datasource"]["type"] == "tempo"]
    assert [t["query"] for p in tempo for t in p["targets"]] == [query]
    assert tempo[0]["targets"][0]["queryType"] == "traceql"
