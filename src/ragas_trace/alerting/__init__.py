"""Alert rules measured before they ship: synthetic scored traffic, exported as the
library's metrics, evaluated by ``promtool`` against a rules file
(``ragas-trace alerts simulate``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from ragas_trace.alerting.promtool_eval import SimulationError
from ragas_trace.alerting.simulate import AlertResult, Scenario, simulate
from ragas_trace.alerting.traffic import ScoreMix

__all__ = ["AlertResult", "Scenario", "ScoreMix", "SimulationError", "default_rules",
           "load_scores", "simulate"]

_DATA = resources.files("ragas_trace.alerting") / "data"
_DEFAULT_SCORES = {"healthy": "demo-healthy-scores.json", "bad": "demo-bad-scores.json"}


def load_scores(path: Path | None, kind: str) -> list[float]:
    """A JSON list of scores from ``path``, else the demo's ``kind`` (healthy, bad)."""
    source = path if path is not None else _DATA / _DEFAULT_SCORES[kind]
    try:
        values = json.loads(source.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source}: not JSON ({exc})") from None
    if not isinstance(values, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{source}: expected a JSON list of numbers")
    return [float(v) for v in values]


@contextmanager
def default_rules(path: Path | None) -> Iterator[Path]:
    """``path``, else the rules file shipped in the package, as a file on disk."""
    if path is not None:
        if not path.is_file():
            raise ValueError(f"no rules file at {path}")
        yield path
        return
    with resources.as_file(_DATA / "ragas-alerts.yml") as shipped:
        yield shipped
