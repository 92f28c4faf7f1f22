"""Shared by the deploy-kit tests: where the kit lives, the metric series the project
exports (the cross-team interface; scraped for real in tests/demo/test_alerting.py),
and how to run promtool."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "rules" / "ragas-alerts.yml"

_HISTOGRAMS = ("ragas_faithfulness", "ragas_answer_relevance", "ragas_context_relevance",
               "ragas_judge_tokens", "ragas_judge_duration_seconds")
EXPORTED_SERIES = frozenset(
    {f"{h}_{suffix}" for h in _HISTOGRAMS for suffix in ("bucket", "sum", "count")}
    | {"ragas_evaluations_total", "ragas_verdicts_total", "ragas_faithfulness_unscored_total",
       "ragas_scorer_dropped_total", "ragas_held_spans", "ragas_scorer_queue_size",
       "ragas_faithfulness_squares_total", "ragas_judge_cost_usd_total",
       "ragas_internal_errors_total", "ragas_metric_evaluations_total"}
)
_METRIC_NAME = re.compile(r"\b(ragas_[a-z_]+)\b")
_RECORDED_NAME = re.compile(r"\bragas:[a-z_]+(?::\w+)?")


def metric_names(expr: str) -> set[str]:
    return set(_METRIC_NAME.findall(expr))


def recorded_names(expr: str) -> set[str]:
    """The recording rules' series (``ragas:faithfulness_mean:10m``) an expression reads."""
    return set(_RECORDED_NAME.findall(expr))


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def run_promtool(promtool: str, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
