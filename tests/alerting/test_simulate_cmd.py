"""``ragas-trace alerts simulate`` end to end: synthetic series through promtool."""

import json
from pathlib import Path
from typing import Any

import pytest

from ragas_trace.alerting.promtool_eval import SimulationError, _answers
from ragas_trace.cli.main import main

RULES = """groups:
  - name: probes
    rules:
      - alert: Always  # fires on every app from its first scores
        expr: ragas_faithfulness_count > 0
      - alert: Never
        expr: ragas_faithfulness_count < 0
"""


def _simulate(capsys: pytest.CaptureFixture[str], promtool: str, *args: str) -> Any:
    code = main(["alerts", "simulate", "--json", "--promtool", promtool, *args])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)["alerts"]


def test_firing_times_and_pages_are_read_back_from_promtool(
        capsys: pytest.CaptureFixture[str], promtool: str, tmp_path: Path) -> None:
    rules = tmp_path / "probes.yml"
    rules.write_text(RULES, encoding="utf-8")
    alerts = _simulate(capsys, promtool, "--rules", str(rules), "--runs", "3",
                       "--steady-days", "2", "--scored-per-s", "1")
    # Already firing at the change: a delay of 0. One page per day-long steady app: 2 in
    # 2 days, 7 a week.
    assert alerts["Always"] == {"detected": 3, "runs": 3, "median_min": 0.0, "p90_min": 0.0,
                                "false_alarms_per_week": 7.0}
    assert alerts["Never"] == {"detected": 0, "runs": 3, "median_min": None, "p90_min": None,
                               "false_alarms_per_week": 0.0}


def test_the_shipped_rules_page_on_a_large_drop(capsys: pytest.CaptureFixture[str],
                                                promtool: str) -> None:
    alerts = _simulate(capsys, promtool, "--runs", "3", "--steady-days", "1",
                       "--scored-per-s", "1", "--drop", "0.5", "--seed", "3")
    assert set(alerts) == {"RagasFaithfulnessDrop", "RagasFaithfulnessLow",
                           "RagasFaithfulnessFailRate", "RagasFaithfulnessFailRateByModel",
                           "RagasEvaluationFailuresHigh", "RagasScorerDroppingWork",
                           "RagasInternalErrors"}
    drop = alerts["RagasFaithfulnessDrop"]
    assert drop["detected"] == 3 and drop["p90_min"] <= 10
    # The drop leaves about 60 % of the answers failing: the fail share pages too,
    # and never on the steady day.
    fail_rate = alerts["RagasFaithfulnessFailRate"]
    assert fail_rate["detected"] == 3 and fail_rate["false_alarms_per_week"] == 0
    assert alerts["RagasScorerDroppingWork"]["detected"] == 0
    assert alerts["RagasInternalErrors"]["detected"] == 0


def test_bad_input_is_a_clear_error(capsys: pytest.CaptureFixture[str], promtool: str,
                                    tmp_path: Path) -> None:
    scores = tmp_path / "scores.json"
    scores.write_text('{"not": "a list"}', encoding="utf-8")
    assert main(["alerts", "simulate", "--scores", str(scores)]) == 2
    assert "expected a JSON list of numbers" in capsys.readouterr().err
    assert main(["alerts", "simulate", "--drop", "0.9"]) == 2
    assert "more than the healthy mean" in capsys.readouterr().err
    broken = tmp_path / "broken.yml"
    broken.write_text("groups:\n  - name: x\n    rules:\n      - alert: A\n        expr: sum(\n",
                      encoding="utf-8")
    assert main(["alerts", "simulate", "--rules", str(broken), "--runs", "1",
                 "--steady-days", "1", "--promtool", promtool]) == 2
    assert "promtool" in capsys.readouterr().err


def test_unexpected_promtool_output_is_an_error_not_a_result() -> None:
    questions = {"first": ("min_over_time(x[1m:1m])", 10)}
    with pytest.raises(SimulationError, match="promtool failed"):
        _answers("  FAILED:\nsomething else went wrong\n", 1, questions)
    assert _answers("  SUCCESS\n", 0, questions) == {"first": []}
