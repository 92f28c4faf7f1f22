from deploy_kit import (
    DEPLOY,
    EXPORTED_SERIES,
    RULES,
    load_yaml,
    metric_names,
    run_promtool,
)

ALERTS = {"RagasFaithfulnessLow", "RagasFaithfulnessDrop", "RagasEvaluationFailuresHigh",
          "RagasScorerDroppingWork"}


def test_rules_pass_promtool_check(promtool: str) -> None:
    out = run_promtool(promtool, "check", "rules", str(RULES))
    assert f"SUCCESS: {len(ALERTS)} rules found" in out


def test_rules_unit_tests_pass(promtool: str) -> None:
    out = run_promtool(promtool, "test", "rules", "ragas-alerts.test.yml", cwd=RULES.parent)
    assert "SUCCESS" in out


def test_prometheus_config_is_valid_and_loads_the_rules(promtool: str) -> None:
    out = run_promtool(promtool, "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))
    assert "SUCCESS: 1 rule files found" in out


def test_every_alert_is_labelled_explained_and_reads_exported_metrics() -> None:
    rules = [r for g in load_yaml(RULES)["groups"] for r in g["rules"]]
    assert {r["alert"] for r in rules} == ALERTS
    for rule in rules:
        assert rule["labels"]["severity"] in {"page", "warning"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
        names = metric_names(rule["expr"])
        assert names and names <= EXPORTED_SERIES, (rule["alert"], names - EXPORTED_SERIES)


def test_unit_tests_cover_every_alert_firing() -> None:
    tests = load_yaml(RULES.parent / "ragas-alerts.test.yml")["tests"]
    fired = {case["alertname"] for t in tests for case in t["alert_rule_test"]
             if case.get("exp_alerts")}
    assert fired == ALERTS
