import re
from typing import Any

from deploy_kit import (
    DEPLOY,
    EXPORTED_SERIES,
    RULES,
    load_yaml,
    metric_names,
    recorded_names,
    run_promtool,
)

ALERTS = {"RagasFaithfulnessLow", "RagasFaithfulnessDrop", "RagasFaithfulnessFailRate",
          "RagasFaithfulnessFailRateByModel", "RagasEvaluationFailuresHigh",
          "RagasScorerDroppingWork", "RagasInternalErrors"}
BY_MODEL_GROUP = "ragas-trace-faithfulness-by-model"
PACKAGED = (DEPLOY.parent / "src" / "ragas_trace" / "alerting" / "data" / "ragas-alerts.yml")
_GROUPING = re.compile(r"\b(?:sum|max|min|avg|count) by \(([^)]*)\)")


def _rules() -> list[dict[str, Any]]:
    return [r for g in load_yaml(RULES)["groups"] for r in g["rules"]]


def test_rules_pass_promtool_check(promtool: str) -> None:
    out = run_promtool(promtool, "check", "rules", str(RULES))
    assert f"SUCCESS: {len(_rules())} rules found" in out


def test_rules_unit_tests_pass(promtool: str) -> None:
    out = run_promtool(promtool, "test", "rules", "ragas-alerts.test.yml", cwd=RULES.parent)
    assert "SUCCESS" in out


def test_prometheus_config_is_valid_and_loads_the_rules(promtool: str) -> None:
    out = run_promtool(promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))
    assert "SUCCESS: 1 rule files found" in out


def test_the_simulator_ships_the_same_rules() -> None:
    assert PACKAGED.read_bytes() == RULES.read_bytes()


def test_every_alert_is_labelled_explained_and_reads_exported_metrics() -> None:
    alerts = [r for r in _rules() if "alert" in r]
    assert {r["alert"] for r in alerts} == ALERTS
    for rule in alerts:
        assert rule["labels"]["severity"] in {"page", "warning"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_recording_rules_are_defined_before_use_and_read_exported_metrics() -> None:
    for group in load_yaml(RULES)["groups"]:
        defined: set[str] = set()
        for rule in group["rules"]:
            name = rule.get("record") or rule["alert"]
            exported, recorded = metric_names(rule["expr"]), recorded_names(rule["expr"])
            assert exported or recorded, name
            assert exported <= EXPORTED_SERIES, (name, exported - EXPORTED_SERIES)
            # Same group, earlier: evaluated first in each evaluation.
            assert recorded <= defined, (name, recorded - defined)
            if "record" in rule:
                defined.add(rule["record"])


def test_faithfulness_is_grouped_by_service_app_and_judge() -> None:
    # The by-model variant adds the model; every other rule ignores it (a user who
    # never looks at the label reads what the rules read before it existed).
    for group in load_yaml(RULES)["groups"]:
        expected = ["service", "app", "judge"] + (["model"] if group["name"] == BY_MODEL_GROUP
                                                  else [])
        for rule in group["rules"]:
            if "faithfulness" in rule["expr"]:
                for grouping in _GROUPING.findall(rule["expr"]):
                    assert [g.strip() for g in grouping.split(",")] == expected


def test_unit_tests_cover_every_alert_firing_pending_and_quiet() -> None:
    tests = load_yaml(RULES.parent / "ragas-alerts.test.yml")["tests"]
    cases = [c for t in tests for c in t["alert_rule_test"]]
    assert {c["alertname"] for c in cases if c.get("exp_alerts")} == ALERTS
    assert {c["alertname"] for c in cases if not c.get("exp_alerts")} == ALERTS
    pending = {s["labels"] for t in tests for e in t.get("promql_expr_test", [])
               if 'alertstate="pending"' in e["expr"] for s in e["exp_samples"]}
    assert {re.search(r'alertname="(\w+)"', p).group(1) for p in pending} == ALERTS
