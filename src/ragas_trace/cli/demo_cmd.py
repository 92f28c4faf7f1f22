"""``ragas-trace demo``: the whole loop offline in one command. A small LangChain RAG
app over an invented corpus answers questions (hallucinating in a share of them),
the one callback captures each request, the local judge scores it in the background,
and the scored spans land in ``DIR/spans.jsonl`` or an OTLP collector."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ragas_trace import providers
from ragas_trace._settings import argument_type, integer, number
from ragas_trace.cli import export_problems, extras

_DESCRIPTION = __doc__
_AT_LEAST_1 = argument_type(integer(1))
_PORT = argument_type(integer(1, 65535))
_NON_NEGATIVE = argument_type(number(0.0))
_SHARE = argument_type(number(0.0, 1.0))
EXIT_OK, EXIT_UNSCORED, EXIT_USAGE, EXIT_EXPORT_FAILED = 0, 1, 2, 3
_EPILOG = """\
exit codes:
  0  every request scored, and (with an OTLP endpoint) every span delivered
  1  not every request was scored (the warning gives their statuses, e.g. timeout)
  2  bad arguments, a missing extra, no API key for --judge openai, a port taken
  3  spans could not be exported to the OTLP endpoint (the error says where and why;
     failed metrics exports only warn: a traces-only backend takes no metrics)
  With both 1 and 3, the exit code is 3."""


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "demo", help="run a demo RAG app, score every request, export the spans",
        description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=_AT_LEAST_1, default=40, metavar="N",
                        help="requests to send (default 40)")
    parser.add_argument("--out", type=Path, default=Path("demo-out"), metavar="DIR",
                        help="write spans to DIR/spans.jsonl as OTLP JSON lines "
                             "(default demo-out; ignored with an OTLP endpoint)")
    parser.add_argument("--judge", choices=("local", "openai"), default="local",
                        help="local: offline embedding judge (default); openai: any "
                             "OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY, "
                             "RAGAS_TRACE_JUDGE_MODEL)")
    parser.add_argument("--drift", action="store_true",
                        help="raise the hallucination share from --hallucination-rate to "
                             "--drift-to over the run, so a drop shows on a dashboard")
    parser.add_argument("--metrics-port", type=_PORT, default=None, metavar="PORT",
                        help="serve Prometheus metrics on this port while the demo runs")
    parser.add_argument("--otlp-endpoint", default=None, metavar="URL",
                        help="send traces and metrics to this OTLP collector: a base URL "
                             "(http://localhost:4318, /v1/traces and /v1/metrics appended) "
                             "or a traces URL as backends print it "
                             "(http://127.0.0.1:6006/v1/traces). Default: "
                             "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / _METRICS_ENDPOINT (as "
                             "they are), else OTEL_EXPORTER_OTLP_ENDPOINT (base); "
                             "OTEL_EXPORTER_OTLP_PROTOCOL=grpc for gRPC. Exit 3 when spans "
                             "are not delivered")
    parser.add_argument("--seed", type=int, default=0, help="seed of questions and answers")
    parser.add_argument("--service-name", default=None,
                        help="OTel service name (default OTEL_SERVICE_NAME, else "
                             "ragas-trace-demo)")
    parser.add_argument("--interval", type=_NON_NEGATIVE, default=0.0, metavar="SECONDS",
                        help="pause between requests, to spread a run over time")
    parser.add_argument("--linger", type=_NON_NEGATIVE, default=0.0, metavar="SECONDS",
                        help="keep the process (and its metrics endpoint) up this long "
                             "after the last score")
    parser.add_argument("--hallucination-rate", type=_SHARE, default=0.1, metavar="SHARE",
                        help="share of hallucinated answers (default 0.1)")
    parser.add_argument("--evasion-rate", type=_SHARE, default=0.05, metavar="SHARE",
                        help="share of evasive answers (default 0.05)")
    parser.add_argument("--drift-to", type=_SHARE, default=0.8, metavar="SHARE",
                        help="hallucination share reached at the end of a --drift run "
                             "(default 0.8)")
    parser.add_argument("--drift-requests", type=_AT_LEAST_1, default=None, metavar="N",
                        help="reach --drift-to after N requests and stay there "
                             "(default: at the last request)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # The demo app is LangChain; its spans file is OTLP JSON (or goes over OTLP).
    if not extras.require("demo", ("langchain", "otlp", *extras.judge_extras(args.judge))):
        return extras.EXIT_MISSING_EXTRA
    from ragas_trace.demo.report import render_table, summary
    from ragas_trace.demo.runner import DemoOptions, run_demo

    try:
        options = DemoOptions(
            requests=args.requests, out_dir=args.out, judge=args.judge, drift=args.drift,
            metrics_port=args.metrics_port, otlp_endpoint=args.otlp_endpoint, seed=args.seed,
            service_name=args.service_name, interval_s=args.interval, linger_s=args.linger,
            hallucination_rate=args.hallucination_rate, evasion_rate=args.evasion_rate,
            drift_to=args.drift_to, drift_requests=args.drift_requests,
        )
    except ValueError as exc:
        print(f"ragas-trace demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.metrics_port is not None:
        from ragas_trace.config import Settings

        # The address setup() will bind (RAGAS_TRACE_METRICS_HOST, default 127.0.0.1).
        host = Settings.load().metrics_host
        print(f"Prometheus metrics on http://{host}:{args.metrics_port}/metrics", flush=True)
    # The library's span-loss warnings are folded only where the demo counts the
    # deliveries itself (OTLP); -v shows everything as it happens.
    over_otlp = bool(args.otlp_endpoint) or providers.otlp_configured("traces")
    fold = not getattr(args, "verbose", False)
    try:
        with export_problems.folded_warnings(over_otlp, enabled=fold) as folded:
            result = run_demo(options, _progress)
    except (ValueError, ImportError, OSError) as exc:  # no API key, missing extra, port taken
        print(f"ragas-trace demo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(render_table(result.rows))
    print("answer: FAIL when faithfulness or answer relevance fails (their pass/fail "
          "labels); context relevance rates the retrieval (3 passages for a one-sentence "
          "answer).")
    print()
    print(summary(result.rows, result.thresholds))
    if result.spans_file is not None:
        print(f"spans: {result.spans_file} (OTLP JSON lines)")
    for line in _delivery_lines(result.delivery):
        print(line)
    print(f"done in {result.elapsed_s:.1f} s")
    code = EXIT_OK
    unscored = result.unscored
    if unscored:
        statuses = ", ".join(f"{status} {n}" for status, n in sorted(unscored.items()))
        print(f"warning: {sum(unscored.values())} of {result.requests} requests were not "
              f"scored ({statuses})", file=sys.stderr)
        code = EXIT_UNSCORED
    problems = _export_problems(result.delivery, bool(args.otlp_endpoint))
    if problems and folded.count:
        problems[-1] += (f" [{folded.count} exporter warning(s) folded into this line; "
                         "-v shows them]")
    elif folded.count:
        problems.append(f"note: {folded.count} exporter warning(s) folded (-v shows them)")
    for line in problems:
        print(line, file=sys.stderr)
    spans = result.delivery.get("spans")
    if spans is not None and spans.failed:
        code = EXIT_EXPORT_FAILED
    return code


def _export_problems(delivery: dict[str, Any], from_flag: bool) -> list[str]:
    """One line per endpoint that did not take what was sent: where, how much, and
    when nothing accepts connections there, what to start."""
    spans, metrics = delivery.get("spans"), delivery.get("metrics")
    fix = ("drop --otlp-endpoint" if from_flag
           else "unset the OTEL_EXPORTER_OTLP_*ENDPOINT variables")
    lines = []
    dead: str | None = None
    if spans is not None and spans.failed:
        dead = export_problems.probe(spans.endpoint)
        lost = f"{spans.failed} span(s) could not be exported to {spans.endpoint}"
        if dead is None:
            lines.append(f"error: {lost} (it accepts connections but not the spans)")
        else:
            also = ""
            if metrics is not None and metrics.failed and \
                    export_problems.same_address(spans.endpoint, metrics.endpoint):
                also = f", nor {metrics.failed} metrics export(s) to {metrics.endpoint}"
                metrics = None  # told in this line
            lines.append(f"error: {dead}: start your collector / Phoenix, or {fix} "
                         f"({spans.failed} span(s) not exported{also})")
    if metrics is not None and metrics.failed:
        why = export_problems.probe(metrics.endpoint)
        lines.append(
            f"warning: {why}: {metrics.failed} metrics export(s) not sent" if why else
            f"warning: {metrics.failed} metrics export(s) failed to {metrics.endpoint} "
            "(a traces-only backend such as Phoenix or Jaeger takes no metrics: "
            "use --metrics-port and Prometheus)")
    return lines


def _delivery_lines(delivery: dict[str, Any]) -> list[str]:
    """One line per OTLP signal: what reached its endpoint and what did not."""
    lines = []
    for signal, what in (("spans", "spans"), ("metrics", "metrics exports")):
        d = delivery.get(signal)
        if d is None:
            continue
        state = "all delivered" if not d.failed else f"{d.failed} FAILED"
        lines.append(f"{signal}: {d.sent} {what} sent to {d.endpoint}, {state}")
    if "spans" in delivery and "metrics" not in delivery:
        lines.append("metrics: not exported over OTLP (no metrics endpoint configured)")
    return lines


def _progress(phase: str, done: int, total: int) -> None:
    """A redrawn bar on a terminal; a line every tenth of the run otherwise."""
    if phase == "requests":
        tty = sys.stderr.isatty()
        if tty or done == total or done % max(1, total // 10) == 0:
            filled = 30 * done // total
            bar = f"requests [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}"
            print("\r" + bar if tty else bar, end="" if tty else "\n", file=sys.stderr,
                  flush=True)
    elif phase == "scoring" and done == 0:
        print("\nwaiting for the last scores..." if sys.stderr.isatty()
              else "waiting for the last scores...", file=sys.stderr, flush=True)
    elif phase == "lingering":
        print("keeping the metrics endpoint up...", file=sys.stderr, flush=True)
