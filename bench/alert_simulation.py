"""The shipped alert rules on simulated traffic (``ragas-trace alerts simulate``'s
engine, evaluated by promtool): detection delay after a faithfulness drop and false
pages per simulated week, for three healthy levels x three drops x two rates.

    .venv/bin/python bench/alert_simulation.py [--runs 10] [--steady-days 7]
    .venv/bin/python bench/alert_simulation.py --default-only   # only the CLI's default run
    .venv/bin/python bench/alert_simulation.py --fail-rate      # only the fail share rows

Healthy levels: the demo's local-judge scores (the packaged sample,
tools/derive_alert_scores.py); the same blended with the demo's unfaithful answers to
a mean of 0.60; and an LLM judge's mix, mostly 1.0 with some partial scores (0.98).
The drops mix in the demo's unfaithful answers. Also ``ragas-trace alerts simulate``
run with its defaults, its output kept for the alerting guide (figure ``default``).

The fail share rule (``RagasFaithfulnessFailRate``) is a level, not a drop: apps that
invent a share of their answers from their first request (the demo's answers, one in
ten invented, with more of its unfaithful answers mixed in), its delay counted from
the start, and its false pages on the demo's own mix (figures ``fail-rate ...``)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from typing import Any

import numpy as np

from ragas_trace.alerting import Scenario, ScoreMix, default_rules, load_scores, simulate
from ragas_trace.alerting.promtool_eval import find_promtool
from ragas_trace.alerting.traffic import FAIL_BELOW
from results_file import RESULTS, write_results

PAGES = ("RagasFaithfulnessDrop", "RagasFaithfulnessLow")
RATES = (0.2, 0.01)
DROPS = (0.10, 0.15, 0.30)
DEFAULT_RUN = "default"
FAIL_RATE_PAGE = "RagasFaithfulnessFailRate"
FAIL_RATE_PREFIX = "fail-rate"
DEMO_INVENTED = 0.1  # the demo's hallucination rate in its healthy sample
INVENTED = (0.1, 0.2, 0.3, 0.5)  # the share of invented answers from the start


def default_run() -> dict[str, Any]:
    """``ragas-trace alerts simulate`` with its defaults: its output, as printed."""
    from ragas_trace.cli.main import main as cli

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli(["alerts", "simulate"])
    if code != 0:
        raise RuntimeError(f"ragas-trace alerts simulate exited {code}")
    output = printed.getvalue()
    drop = next(line for line in output.splitlines() if line.startswith(PAGES[0]))
    median = drop.split()[2]
    return {"value": None if median == "-" else float(median), "unit": "min",
            "label": f"ragas-trace alerts simulate (defaults): {PAGES[0]} median minutes",
            "output": output}


def healthy_levels(rng: np.random.Generator) -> dict[str, np.ndarray]:
    demo = np.asarray(load_scores(None, "healthy"))
    bad = np.asarray(load_scores(None, "bad"))
    blend_share = (demo.mean() - 0.60) / (demo.mean() - bad.mean())
    blended = np.where(rng.random(2000) < blend_share, rng.choice(bad, 2000),
                       rng.choice(demo, 2000))
    partial = rng.choice([0.67, 0.75, 0.8, 0.83], 2000)
    llm = np.where(rng.random(2000) < 0.9, 1.0, partial)
    return {"demo blended to 0.60": blended, "demo local judge": demo, "LLM-judge mix": llm}


def markdown_table(figures: dict[str, Any]) -> str:
    """The docs' table (docs/guides/alerting.md) from the saved figures."""
    def delay(result: dict[str, Any]) -> str:
        if result["median_min"] is None:
            return f"{result['detected']}/{result['runs']}, -"
        p90 = "-" if result["p90_min"] is None else f"{result['p90_min']:g}"
        return f"{result['detected']}/{result['runs']}, {result['median_min']:g} / {p90}"

    lines = ["| scored/s | healthy mean | drop | Drop: caught, median / p90 min | "
             "Low: caught, median / p90 min | false pages / week |",
             "| --- | --- | --- | --- | --- | --- |"]
    for key, figure in figures.items():
        if key == DEFAULT_RUN or key.startswith(FAIL_RATE_PREFIX):
            continue
        rate, _, mean, _, drop = key.split()
        drop_alert, low = (figure["alerts"][a] for a in PAGES)
        lines.append(f"| {rate.removesuffix('/s')} | {mean} | {drop} | {delay(drop_alert)} | "
                     f"{delay(low)} | {figure['false_pages_per_week']:g} |")
    return "\n".join(lines)


def fail_rate_runs(runs: int, steady_days: float) -> dict[str, Any]:
    """The fail share rule on apps that invent a share of their answers from the start."""
    promtool = find_promtool()
    healthy, bad = load_scores(None, "healthy"), load_scores(None, "bad")
    mix = ScoreMix.of(healthy, bad)
    gap = mix.healthy.mean() - mix.bad.mean()
    figures: dict[str, Any] = {}
    with default_rules(None) as rules:
        for rate in RATES:
            for invented in INVENTED:
                # More of the demo's unfaithful answers, from the first request on.
                extra = (invented - DEMO_INVENTED) / (1.0 - DEMO_INVENTED)
                steady = invented == DEMO_INVENTED
                scenario = Scenario(mix=mix, scored_per_s=rate, drop=extra * gap,
                                    runs=runs, steady_days=steady_days if steady else 0.25,
                                    warmup_minutes=0, horizon_minutes=360, seed=11)
                result = simulate(scenario, rules, promtool)[FAIL_RATE_PAGE]
                key = f"{FAIL_RATE_PREFIX} {rate}/s invented {invented}"
                figures[key] = {
                    "value": result.median_min, "unit": "min",
                    "label": f"{FAIL_RATE_PAGE} median minutes from the start to firing, "
                             f"{invented:.0%} of answers invented, {rate} scored/s",
                    "alerts": {FAIL_RATE_PAGE: result.as_dict()},
                    "false_pages_per_week": result.false_alarms_per_week if steady else None,
                }
                print(key, result.as_dict(), flush=True)
    return figures


def fail_rate_table(figures: dict[str, Any]) -> str:
    """The docs' fail share table (docs/guides/alerting.md) from the saved figures."""
    lines = ["| scored/s | answers invented | fail share | caught within 6 h, median / p90 min "
             "| pages / week |", "| --- | --- | --- | --- | --- |"]
    mix = ScoreMix.of(load_scores(None, "healthy"), load_scores(None, "bad"))
    for key, figure in figures.items():
        if not key.startswith(FAIL_RATE_PREFIX):
            continue
        _, rate, _, invented = key.split()
        extra = (float(invented) - DEMO_INVENTED) / (1.0 - DEMO_INVENTED)
        share = ((1 - extra) * float(np.mean(mix.healthy < FAIL_BELOW))
                 + extra * float(np.mean(mix.bad < FAIL_BELOW)))
        result = figure["alerts"][FAIL_RATE_PAGE]
        caught = f"{result['detected']}/{result['runs']}"
        if result["median_min"] is not None:
            p90 = "-" if result["p90_min"] is None else f"{result['p90_min']:g}"
            caught += f", {result['median_min']:g} / {p90}"
        pages = figure["false_pages_per_week"]
        lines.append(f"| {rate.removesuffix('/s')} | {float(invented):.0%} | {share:.0%} | "
                     f"{caught} | {'-' if pages is None else f'{pages:g}'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--steady-days", type=float, default=7.0)
    parser.add_argument("--default-only", action="store_true",
                        help="run only the CLI's default simulation; keep the other figures")
    parser.add_argument("--fail-rate", action="store_true",
                        help="run only the fail share rule's simulations; keep the others")
    parser.add_argument("--table", action="store_true",
                        help="print the saved figures as the docs' Markdown table")
    args = parser.parse_args()
    if args.table:
        saved = json.loads((RESULTS / "alert_simulation.json").read_text(encoding="utf-8"))
        print(markdown_table(saved["figures"]))
        return 0
    if args.default_only:
        write_results("alert_simulation", {DEFAULT_RUN: default_run()}, merge=True)
        return 0
    if args.fail_rate:
        write_results("alert_simulation", fail_rate_runs(args.runs, args.steady_days),
                      merge=True)
        return 0
    promtool = find_promtool()
    bad = load_scores(None, "bad")
    figures = {}
    with default_rules(None) as rules:
        for rate in RATES:
            for name, healthy in healthy_levels(np.random.default_rng(1)).items():
                false_pages: dict[str, float] = {}
                for drop in DROPS:
                    mix = ScoreMix.of(list(healthy), bad)
                    if drop > mix.healthy.mean() - mix.bad.mean():
                        continue  # even all-bad traffic cannot lower the mean this much
                    # The steady run does not depend on the drop: a week once per level
                    # and rate, a short one (run alongside, so free) otherwise.
                    days = args.steady_days if not false_pages else 0.25
                    results = simulate(Scenario(mix=mix, scored_per_s=rate, drop=drop,
                                                runs=args.runs, steady_days=days, seed=7),
                                       rules, promtool)
                    false_pages = false_pages or {a: results[a].false_alarms_per_week
                                                  for a in PAGES}
                    key = f"{rate}/s mean {mix.healthy.mean():.2f} drop {drop}"
                    page = results[PAGES[0]]
                    figures[key] = {
                        "value": page.median_min, "unit": "min",
                        "label": f"{PAGES[0]} median minutes from the change to firing, "
                                 f"{name}, {rate} scored/s, drop {drop}",
                        "alerts": {a: {**results[a].as_dict(),
                                       "false_alarms_per_week": false_pages[a]}
                                   for a in PAGES},
                        "false_pages_per_week": sum(false_pages.values()),
                    }
                    print(key, figures[key]["alerts"], flush=True)
    figures |= fail_rate_runs(args.runs, args.steady_days)
    figures[DEFAULT_RUN] = default_run()
    write_results("alert_simulation", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
