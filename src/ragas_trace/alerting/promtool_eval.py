"""Evaluate a rules file over synthetic series with ``promtool test rules``, the same
rule engine Prometheus runs, and read back when each alert fired.

promtool only reports what differs from the expected result, so each question is
asked as a PromQL test expecting nothing; its "got" line is the answer. The questions
read the ``ALERTS`` series the rule engine writes while it evaluates."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_SAMPLE = re.compile(r"\{([^{}]*)\} (\S+?)(?:,|$)")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
_ALERT_NAME = re.compile(r"^\s*-?\s*alert:\s*['\"]?([^'\"#\s]+)", re.MULTILINE)


class SimulationError(RuntimeError):
    """promtool is missing, rejected the rules, or answered in an unexpected form."""


def alert_names(rules_text: str) -> list[str]:
    return list(dict.fromkeys(_ALERT_NAME.findall(rules_text)))


def find_promtool(explicit: str | None = None) -> str:
    path = explicit or shutil.which("promtool")
    if path is None:
        raise SimulationError("promtool not found: install Prometheus (Debian/Ubuntu: "
                              "apt-get install prometheus) or pass --promtool PATH")
    return path


@dataclass(frozen=True)
class Episode:
    alert: str
    labels: dict[str, str]
    value: float


def _values(cumulative: np.ndarray) -> str:
    return " ".join(f"{v:.10g}" for v in cumulative)


def evaluate(
    promtool: str, rules: Path, series: Mapping[str, np.ndarray], *, step_s: int,
    questions: Mapping[str, tuple[str, int]], timeout_s: float,
) -> dict[str, list[Episode]]:
    """Load ``series`` (one sample each ``step_s``), evaluate ``rules`` every ``step_s``
    and answer each question (name -> (PromQL over ``ALERTS``, eval time in steps)):
    one result per alert and label set, as promtool printed it."""
    tests = {
        "rule_files": [str(rules.resolve())],
        "evaluation_interval": f"{step_s}s",
        "tests": [{
            "interval": f"{step_s}s",
            "input_series": [{"series": s, "values": _values(v)} for s, v in series.items()],
            "promql_expr_test": [{"expr": expr, "eval_time": f"{at * step_s}s",
                                  "exp_samples": []} for expr, at in questions.values()],
        }],
    }
    with tempfile.TemporaryDirectory(prefix="ragas-alerts-") as tmp:
        path = Path(tmp) / "simulation.test.yml"  # JSON is YAML
        path.write_text(json.dumps(tests), encoding="utf-8")
        try:
            done = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True,
                                  text=True, timeout=timeout_s, check=False)
        except subprocess.TimeoutExpired as exc:
            raise SimulationError(f"promtool took longer than {timeout_s:.0f} s") from exc
        except OSError as exc:
            raise SimulationError(f"cannot run promtool: {exc}") from exc
    return _answers(done.stdout + done.stderr, done.returncode, questions)


def _answers(output: str, returncode: int, questions: Mapping[str, tuple[str, int]]
             ) -> dict[str, list[Episode]]:
    answers: dict[str, list[Episode]] = {name: [] for name in questions}
    if returncode == 0:
        return answers  # every question got the expected nothing: no alert fired
    by_expr = {json.dumps(expr): name for name, (expr, _) in questions.items()}
    current: str | None = None
    for line in output.splitlines():
        stripped = line.strip()
        if stripped.startswith("expr: "):
            quoted = stripped[len("expr: "):].rsplit(", time:", 1)[0]
            current = by_expr.get(quoted)
            if current is None or ", err:" in stripped:
                raise SimulationError(f"promtool could not evaluate the rules:\n{output}")
        elif stripped.startswith("got: ") and current is not None:
            for labels_text, value in _SAMPLE.findall(stripped[len("got: "):]):
                labels = dict(_LABEL.findall(labels_text))
                answers[current].append(Episode(labels.pop("alertname", ""), labels,
                                                float(value)))
            current = None
    if not any(answers.values()):
        raise SimulationError(f"promtool failed:\n{output}")
    return answers
