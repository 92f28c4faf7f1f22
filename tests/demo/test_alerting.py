"""End to end against a real Prometheus: two ``ragas-trace demo`` processes, one with
``--drift`` and one without, each serving its metrics; Prometheus scrapes both every
second and evaluates the shipped alert rules with every duration divided by
``TIME_SCALE`` (5m window -> 10 s, ``for: 1m`` -> 2 s; thresholds and expressions
unchanged). The drifting demo is bad within seconds of its start, before it has a
baseline to drop from, so the floor alert (``RagasFaithfulnessLow``, the page during
the drop alert's warm-up) must fire for it, and no alert for the steady one.

Bounded: the test gives up after ``DEADLINE_S``; it usually ends within a minute.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_harness import Prometheus, free_port, running_prometheus, scale_rules

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "rules" / "ragas-alerts.yml"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "ragas-trace.json"
TIME_SCALE = 30
DEADLINE_S = 150.0
ALERT = "RagasFaithfulnessLow"
# Series the rules and dashboard read that every scoring run must produce (drops
# and their counter only appear under overload).
ALWAYS_EXPORTED = {f"ragas_{m}_{s}" for m in ("faithfulness", "answer_relevance",
                                                "context_relevance", "judge_tokens",
                                                "judge_duration_seconds")
                   for s in ("bucket", "sum", "count")} | {
    "ragas_evaluations_total", "ragas_held_spans", "ragas_scorer_queue_size",
    "ragas_faithfulness_squares_total"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed (apt-get install prometheus; "
                              ".ci/run does)"),
]


def _demo(name: str, port: int, out: Path, drift: bool) -> subprocess.Popen[bytes]:
    # 5 requests a second (the local judge keeps up on 2 busy cores), the drift done
    # in 30 s, then held; the test stops both processes once it has its answer.
    args = [sys.executable, "-m", "ragas_trace.cli.main", "demo", "--requests", "1000",
            "--interval", "0.2", "--drift-requests", "150", "--metrics-port", str(port),
            "--service-name", name, "--out", str(out / name), "--seed", "5"]
    env = {**os.environ, "RAGAS_TRACE_LOCAL_THREADS": "1"}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    with (out / f"{name}.log").open("wb") as log:  # the child keeps its own copy
        return subprocess.Popen([*args, *(["--drift"] if drift else [])], stdout=log,
                                stderr=subprocess.STDOUT, env=env)


@pytest.fixture
def demos(tmp_path: Path) -> Iterator[dict[str, Any]]:
    ports = {"demo-drift": free_port(), "demo-steady": free_port()}
    procs = {name: _demo(name, port, tmp_path, drift=name == "demo-drift")
             for name, port in ports.items()}
    try:
        yield {"ports": ports, "procs": procs, "dir": tmp_path}
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


def _mean(prometheus: Prometheus, window: str) -> dict[str, float]:
    """Mean faithfulness per service over ``window``, where it has 10+ scores (as the
    floor alert requires)."""
    by = "sum by (service, app, judge)"
    expr = (f"{by} (rate(ragas_faithfulness_sum[{window}])) / "
            f"{by} (rate(ragas_faithfulness_count[{window}])) and "
            f"{by} (increase(ragas_faithfulness_count[{window}])) >= 10")
    return {r["metric"]["service"]: float(r["value"][1]) for r in prometheus.query(expr)}


def test_faithfulness_alert_fires_with_drift_and_not_without(demos: dict[str, Any]) -> None:
    workdir: Path = demos["dir"] / "prometheus"
    workdir.mkdir()
    rules = scale_rules(yaml.safe_load(RULES.read_text(encoding="utf-8")), TIME_SCALE)
    window = f"{3600 // TIME_SCALE}s"  # the floor alert's hour
    with running_prometheus(workdir, rules, demos["ports"]) as prometheus:
        deadline = time.monotonic() + DEADLINE_S
        fired: dict[str, Any] | None = None
        steady_alerts: list[dict[str, Any]] = []
        steady_means: list[float] = []
        # Until the drift alert fires and the steady demo has been watched for 30 s
        # (longer than the floor alert needs to fire: 10 scores + 2 s for), at 1 s a poll.
        while ((fired is None or len(steady_means) < 30)
               and time.monotonic() < deadline):
            for name, proc in demos["procs"].items():
                assert proc.poll() is None, (demos["dir"] / f"{name}.log").read_text()[-3000:]
            for alert in prometheus.alerts():
                labels = alert["labels"]
                if labels.get("service") == "demo-steady" and alert["state"] == "firing":
                    steady_alerts.append(alert)
                elif (labels["alertname"] == ALERT and labels.get("service") == "demo-drift"
                      and alert["state"] == "firing" and fired is None):
                    fired = alert
            steady_means += [m for s, m in _mean(prometheus, window).items()
                             if s == "demo-steady"]
            time.sleep(1.0)
        situation = (f"means now {_mean(prometheus, window)}, {len(steady_means)} steady "
                     f"means, alerts {prometheus.alerts()}, targets "
                     f"{prometheus.targets_up()}; logs: "
                     + " | ".join((demos["dir"] / f"{name}.log").read_text()[-1500:]
                                  for name in demos["procs"]))
        assert fired is not None, f"{ALERT} did not fire within {DEADLINE_S:.0f} s; {situation}"
        assert float(fired["value"]) > 4.2  # standard errors below the 0.5 floor (its threshold)
        assert fired["labels"]["app"] == "marrowick-guide"
        assert fired["labels"]["judge"].startswith("local:")
        # The steady demo was scored all along, well above the 0.5 floor (the fitted
        # judge's faithfulness is the probability of no unsupported statement: about
        # 0.7 on the demo's healthy mix).
        assert len(steady_means) >= 30, situation
        assert statistics.median(steady_means) > 0.6, steady_means
        # The recording rules give the steady demo the spread the alerts divide by.
        # (setup() also made the series of the app_name setting's app, "unknown", at
        # zero: no scores, so no variance, only NaN.)
        [variance] = [r for r in prometheus.query("ragas:faithfulness_variance:1h")
                      if r["metric"]["service"] == "demo-steady"
                      and r["metric"]["app"] == "marrowick-guide"]
        assert 0.0 < float(variance["value"][1]) < 0.25
        assert steady_alerts == []
        names = {r["metric"]["__name__"] for r in prometheus.query(
            '{__name__=~"ragas_.+", job="demo-drift"}')}
        assert names >= ALWAYS_EXPORTED, ALWAYS_EXPORTED - names
        # The dashboard's pass rates read the judge's own verdicts, per metric.
        verdicts = {(r["metric"]["metric"], r["metric"]["label"]) for r in prometheus.query(
            'ragas_verdicts_total{job="demo-drift"}')}
        assert {metric for metric, _ in verdicts} == _dashboard_pass_rate_metrics()
        assert {label for _, label in verdicts} == {"pass", "fail"}


def _dashboard_pass_rate_metrics() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])
             if "ragas_verdicts_total" in t.get("expr", "")]
    return {m for e in exprs for m in re.findall(r'metric="(\w+)"', e)}
