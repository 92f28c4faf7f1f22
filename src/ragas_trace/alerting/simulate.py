"""Replay synthetic scored traffic through a rules file and measure each alert: how
many drop runs it caught, the minutes from the change to firing, and how often it
fired in a steady run with no change (false pages per simulated week)."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragas_trace.alerting.promtool_eval import Episode, alert_names, evaluate
from ragas_trace.alerting.traffic import Change, ScoreMix, scrape_series

SERVICE = "simulated"
JUDGE = "simulated-judge"


@dataclass(frozen=True)
class Scenario:
    mix: ScoreMix
    scored_per_s: float = 0.2
    drop: float = 0.15
    ramp_minutes: float = 0.0
    runs: int = 20
    steady_days: float = 7.0
    seed: int = 0
    warmup_minutes: int = 420  # history before the change: the longest window shipped
    horizon_minutes: int = 180  # how long after the change a run may still be caught
    step_s: int = 60  # scrape and rule evaluation interval (Prometheus' default)
    timeout_s: float = 600.0


@dataclass(frozen=True)
class AlertResult:
    detected: int
    runs: int
    median_min: float | None
    p90_min: float | None
    false_alarms_per_week: float

    def as_dict(self) -> dict[str, float | int | None]:
        return {"detected": self.detected, "runs": self.runs, "median_min": self.median_min,
                "p90_min": self.p90_min, "false_alarms_per_week": self.false_alarms_per_week}


def simulate(scenario: Scenario, rules: Path, promtool: str) -> dict[str, AlertResult]:
    if scenario.scored_per_s <= 0 or scenario.runs < 1 or scenario.steady_days <= 0:
        raise ValueError("scored-per-s and steady-days must be positive, runs at least 1")
    names = alert_names(rules.read_text(encoding="utf-8"))
    rng = np.random.default_rng(scenario.seed)
    seeds = rng.integers(0, 2**63, size=2)
    with ThreadPoolExecutor(max_workers=2) as pool:  # two promtool processes
        drops = pool.submit(_drop_runs, scenario, rules, names, promtool,
                            np.random.default_rng(seeds[0]))
        steady = pool.submit(_steady_run, scenario, rules, names, promtool,
                             np.random.default_rng(seeds[1]))
        delays, episodes = drops.result(), steady.result()
    weeks = scenario.steady_days / 7.0
    results = {}
    for name in names:
        caught = delays.get(name, [])
        ranked = sorted(caught) + [math.inf] * (scenario.runs - len(caught))
        results[name] = AlertResult(
            detected=len(caught), runs=scenario.runs,
            median_min=_finite(_quantile(ranked, 0.5)), p90_min=_finite(_quantile(ranked, 0.9)),
            false_alarms_per_week=round(episodes.get(name, 0) / weeks, 2))
    return results


def _drop_runs(scenario: Scenario, rules: Path, names: list[str], promtool: str,
               rng: np.random.Generator) -> dict[str, list[float]]:
    step = scenario.step_s
    change_step = math.ceil(scenario.warmup_minutes * 60 / step)
    horizon = math.ceil(scenario.horizon_minutes * 60 / step)
    change = Change(at_s=change_step * step, share=scenario.mix.bad_share(scenario.drop),
                    ramp_s=scenario.ramp_minutes * 60)
    series: dict[str, np.ndarray] = {}
    for run in range(scenario.runs):
        series |= scrape_series(scenario.mix, change, scored_per_s=scenario.scored_per_s,
                                step_s=step, steps=change_step + horizon,
                                labels=_labels(f"run-{run}"), rng=rng)
    # The first firing sample after the change; one question per alert and run, since
    # promtool's engine loads at most 10,000 samples a query and the subquery takes
    # two a step for each firing series (one question for all of them failed once
    # four alerts fired in each of 20 runs).
    questions = {}
    for run in range(scenario.runs):
        for name in names:
            firing = f'ALERTS{{alertstate="firing",alertname="{name}",app="run-{run}"}}'
            questions[f"first {run} {name}"] = (
                f"min_over_time(timestamp({firing})[{horizon * step}s:{step}s])",
                change_step + horizon)
    answers = evaluate(promtool, rules, series, step_s=step, questions=questions,
                       timeout_s=scenario.timeout_s)
    first_s: dict[tuple[str, str], float] = {}
    for episode in _runs_only([e for found in answers.values() for e in found]):
        key = (episode.alert, episode.labels["app"])
        first_s[key] = min(episode.value, first_s.get(key, math.inf))
    delays: dict[str, list[float]] = {}
    for (alert, _), at_s in first_s.items():
        delays.setdefault(alert, []).append(round((at_s - change.at_s) / 60.0, 2))
    return delays


def _steady_run(scenario: Scenario, rules: Path, names: list[str], promtool: str,
                rng: np.random.Generator) -> dict[str, int]:
    """The steady run as day-long apps side by side: promtool's cost grows with the
    evaluations, hardly with the series, so a week of seven apps costs one day; each
    app starts with no history, so the warm-up is counted too."""
    step = scenario.step_s
    apps = math.ceil(scenario.steady_days)
    steps = math.ceil(scenario.steady_days * 86400 / apps / step)
    series: dict[str, np.ndarray] = {}
    for app in range(apps):
        series |= scrape_series(scenario.mix, None, scored_per_s=scenario.scored_per_s,
                                step_s=step, steps=steps, labels=_labels(f"steady-{app}"),
                                rng=rng)
    # Pages counted as the evaluations where an alert turns to firing; one question
    # per app and alert, since promtool's engine loads at most 10,000 samples a query
    # and a day's subquery takes two a step for each firing series.
    questions: dict[str, tuple[str, int]] = {}
    for app in range(apps):
        for name in names:
            firing = (f'ALERTS{{alertstate="firing",alertname="{name}",'
                      f'app="steady-{app}"}}')
            questions[f"starts {app} {name}"] = (
                f"count_over_time(({firing} unless {firing} offset {step}s)"
                f"[{steps * step}s:{step}s])", steps)
    answers = evaluate(promtool, rules, series, step_s=step, questions=questions,
                       timeout_s=scenario.timeout_s)
    counts: dict[str, int] = {}
    for episode in (e for found in answers.values() for e in found):
        counts[episode.alert] = counts.get(episode.alert, 0) + int(episode.value)
    return counts


def _labels(app: str) -> dict[str, str]:
    return {"service": SERVICE, "app": app, "judge": JUDGE}


def _runs_only(episodes: list[Episode]) -> list[Episode]:
    return [e for e in episodes if e.labels.get("app", "").startswith("run-")]


def _quantile(ranked: list[float], q: float) -> float:
    """The nearest-rank quantile (undetected runs rank last, as infinity)."""
    return ranked[max(0, math.ceil(q * len(ranked)) - 1)]


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else round(value, 1)
