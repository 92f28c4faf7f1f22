"""The alerts' links to the failing traces: in the shipped rules, as promtool expands
them, and as ``ragas-trace alerts rules`` / ``links`` print them for other URLs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from ragas_trace.alerting.links import LINK_ANNOTATIONS, TraceBackends, render_rules
from ragas_trace.cli.main import main

RULES_DIR = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules"
LINKED = {"RagasFaithfulnessDrop": "2h", "RagasFaithfulnessLow": "1h",
          "RagasFaithfulnessFailRate": "2h", "RagasFaithfulnessFailRateByModel": "2h"}


def _alerts() -> dict[str, dict[str, str]]:
    rules = yaml.safe_load((RULES_DIR / "ragas-alerts.yml").read_text(encoding="utf-8"))
    return {r["alert"]: r["annotations"] for g in rules["groups"] for r in g["rules"]
            if "alert" in r}


def test_every_faithfulness_alert_links_to_its_failing_traces() -> None:
    alerts = _alerts()
    for name, lookback in LINKED.items():
        links = {k: v for k, v in alerts[name].items() if k in LINK_ANNOTATIONS}
        assert links == TraceBackends().links(lookback), name
        assert "traces_jaeger, traces_tempo" in alerts[name]["description"]


def test_promtool_expands_the_links_to_what_alerts_links_prints() -> None:
    # The unit tests' expected annotations pass promtool (tests/deploy): the links
    # Prometheus sends for service "shop".
    tests = yaml.safe_load((RULES_DIR / "ragas-alerts.test.yml").read_text(encoding="utf-8"))
    expected = [a["exp_annotations"] for t in tests["tests"] for case in t["alert_rule_test"]
                if case["alertname"] in LINKED for a in case.get("exp_alerts") or []]
    assert len(expected) >= 5
    for found in expected:
        lookback = "1h" if "lookback=1h" in found["traces_jaeger"] else "2h"
        links = {k: found[k] for k in LINK_ANNOTATIONS}
        assert links == TraceBackends().expanded("shop", lookback)


def test_rules_for_other_backends_keep_everything_but_the_links(promtool: str,
                                                                tmp_path: Path) -> None:
    shipped = (RULES_DIR / "ragas-alerts.yml").read_text(encoding="utf-8")
    backends = TraceBackends("https://jaeger.example.com/", "https://grafana.example.com",
                             "tempo-prod")
    rendered = render_rules(shipped, backends)
    assert "localhost" not in rendered
    assert rendered.count("https://jaeger.example.com/search?") == len(LINKED)
    assert rendered.count("https://grafana.example.com/explore?") == len(LINKED)
    assert rendered.count('\\"datasource\\":\\"tempo-prod\\"') == len(LINKED)
    # Only the link lines differ.
    changed = [a for a, b in zip(shipped.splitlines(), rendered.splitlines(), strict=True)
               if a != b]
    assert len(changed) == 2 * len(LINKED)
    assert all(line.lstrip().startswith(LINK_ANNOTATIONS) for line in changed)
    path = tmp_path / "rules.yml"
    path.write_text(rendered, encoding="utf-8")
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_cli_prints_rules_and_links(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["alerts", "rules", "--jaeger-url", "http://j:16686"]) == 0
    assert "http://j:16686/search?service={{ $labels.service | urlquery }}" in (
        capsys.readouterr().out)
    assert main(["alerts", "links", "--service", "shop", "--lookback", "1h"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{k}: {v}" for k, v in TraceBackends().expanded("shop", "1h").items()]
    assert main(["alerts", "links", "--service", "s", "--grafana-url", "ftp://x"]) == 2
    assert "grafana_url: expected an http(s) URL" in capsys.readouterr().err
