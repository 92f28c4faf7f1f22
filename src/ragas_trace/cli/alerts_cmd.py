"""``ragas-trace alerts simulate``: replay synthetic scored traffic through a Prometheus
rules file, evaluated by ``promtool``, and report per alert how many drop runs it
caught, the median and 90th-percentile minutes from the change to firing, and its
false pages per simulated week in a steady run.

``ragas-trace alerts rules``: the shipped rules with their links to the failing
traces built for your Jaeger and Grafana (Tempo); ``ragas-trace alerts links``: those
links for one service, as an alert's annotations give them."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragas_trace._settings import argument_type, integer, number

_DESCRIPTION = __doc__
_POSITIVE = argument_type(number(0.0, above=True))
_NON_NEGATIVE = argument_type(number(0.0))
_AT_LEAST_1 = argument_type(integer(1))


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "alerts", help="measure alert rules; print them with trace links",
        description=_DESCRIPTION)
    commands = parser.add_subparsers(dest="alerts_command", metavar="COMMAND", required=True)
    simulate = commands.add_parser("simulate", help="detection delay and false pages of a "
                                   "rules file", description=_DESCRIPTION)
    simulate.add_argument("--rules", type=Path, default=None, metavar="FILE",
                          help="Prometheus rules file (default: the shipped ragas-alerts.yml)")
    simulate.add_argument("--scored-per-s", type=_POSITIVE, default=0.2, metavar="R",
                          help="scored requests a second per app (default 0.2)")
    simulate.add_argument("--scores", type=Path, default=None, metavar="FILE",
                          help="JSON list of healthy faithfulness scores to draw from "
                               "(default: the demo app's, scored by the local judge)")
    simulate.add_argument("--bad-scores", type=Path, default=None, metavar="FILE",
                          help="JSON list of the scores of unfaithful answers (default: "
                               "the demo app's hallucinated answers)")
    simulate.add_argument("--drop", type=_NON_NEGATIVE, default=0.15, metavar="D",
                          help="fall of the mean at the change (default 0.15)")
    simulate.add_argument("--ramp-minutes", type=_NON_NEGATIVE, default=0.0, metavar="M",
                          help="reach the drop over M minutes instead of at once")
    simulate.add_argument("--runs", type=_AT_LEAST_1, default=20, metavar="K",
                          help="drop runs (default 20)")
    simulate.add_argument("--steady-days", type=_POSITIVE, default=7.0, metavar="N",
                          help="length of the steady run counted for false pages (default 7)")
    simulate.add_argument("--seed", type=int, default=0, help="seed of the traffic")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.add_argument("--promtool", default=None, metavar="PATH",
                          help="promtool binary (default: promtool on PATH)")
    simulate.set_defaults(func=run)
    rules = commands.add_parser("rules", help="print the shipped rules with trace links "
                                "for your tracing backends", description=_DESCRIPTION)
    _backend_arguments(rules)
    rules.set_defaults(func=run_rules)
    links = commands.add_parser("links", help="print the links to a service's failing "
                                "traces", description=_DESCRIPTION)
    links.add_argument("--service", required=True, help="the alert's service label")
    links.add_argument("--lookback", default="2h", choices=("1h", "2h"),
                       help="how far back (default 2h, the longest window)")
    _backend_arguments(links)
    links.set_defaults(func=run_links)


def _backend_arguments(parser: argparse.ArgumentParser) -> None:
    from ragas_trace.alerting.links import (
        DEFAULT_GRAFANA_URL,
        DEFAULT_JAEGER_URL,
        DEFAULT_TEMPO_UID,
    )

    parser.add_argument("--jaeger-url", default=DEFAULT_JAEGER_URL, metavar="URL",
                        help=f"Jaeger's UI (default {DEFAULT_JAEGER_URL})")
    parser.add_argument("--grafana-url", default=DEFAULT_GRAFANA_URL, metavar="URL",
                        help=f"Grafana, for Explore on Tempo (default {DEFAULT_GRAFANA_URL})")
    parser.add_argument("--tempo-uid", default=DEFAULT_TEMPO_UID, metavar="UID",
                        help=f"Grafana's Tempo data source uid (default {DEFAULT_TEMPO_UID})")


def _backends(args: argparse.Namespace, command: str) -> Any:
    from ragas_trace.alerting.links import TraceBackends

    try:
        return TraceBackends(args.jaeger_url, args.grafana_url, args.tempo_uid)
    except ValueError as exc:
        print(f"ragas-trace alerts {command}: {exc}", file=sys.stderr)
        return None


def run_rules(args: argparse.Namespace) -> int:
    from ragas_trace.alerting import default_rules
    from ragas_trace.alerting.links import render_rules

    backends = _backends(args, "rules")
    if backends is None:
        return 2
    with default_rules(None) as shipped:
        sys.stdout.write(render_rules(shipped.read_text(encoding="utf-8"), backends))
    return 0


def run_links(args: argparse.Namespace) -> int:
    backends = _backends(args, "links")
    if backends is None:
        return 2
    for name, link in backends.expanded(args.service, args.lookback).items():
        print(f"{name}: {link}")
    return 0


def run(args: argparse.Namespace) -> int:
    from ragas_trace.alerting import (
        SimulationError,
        default_rules,
        load_scores,
        simulate,
    )
    from ragas_trace.alerting.promtool_eval import find_promtool
    from ragas_trace.alerting.simulate import Scenario
    from ragas_trace.alerting.traffic import ScoreMix

    try:
        mix = ScoreMix.of(load_scores(args.scores, "healthy"), load_scores(args.bad_scores, "bad"))
        scenario = Scenario(mix=mix, scored_per_s=args.scored_per_s, drop=args.drop,
                            ramp_minutes=args.ramp_minutes, runs=args.runs,
                            steady_days=args.steady_days, seed=args.seed)
        mix.bad_share(args.drop)  # an impossible drop fails before any work
        with default_rules(args.rules) as rules:
            results = simulate(scenario, rules, find_promtool(args.promtool))
    except (ValueError, OSError, SimulationError) as exc:
        print(f"ragas-trace alerts simulate: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"alerts": {name: r.as_dict() for name, r in results.items()}}))
        return 0
    print(f"{args.runs} runs, drop {args.drop} at {args.scored_per_s} scored/s "
          f"(healthy mean {mix.healthy.mean():.3f}); steady run {args.steady_days:g} days")
    print(f"{'alert':<34} {'detected':>9} {'median min':>11} {'p90 min':>8} "
          f"{'false/week':>11}")
    for name, r in results.items():
        print(f"{name:<34} {f'{r.detected}/{r.runs}':>9} {_minutes(r.median_min):>11} "
              f"{_minutes(r.p90_min):>8} {r.false_alarms_per_week:>11.2f}")
    return 0


def _minutes(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
