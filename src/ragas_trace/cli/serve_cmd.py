"""``ragas-trace serve``: the OTLP scoring gateway. Every option is a flag, an
environment variable and a config-file key (see ``ragas_trace.gateway.settings``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from typing import Any

from ragas_trace._settings import auto_boolean, boolean
from ragas_trace.cli import extras
from ragas_trace.gateway.settings import OPTIONS

logger = logging.getLogger("ragas_trace.gateway")

_EPILOG = """\
precedence: flag > environment variable > config file > default.
The config file is TOML: keys are the option names with underscores (e.g.
forward_endpoint = "collector:4317"), at top level or in a [serve] table.
The bearer token is read from --token-file or RAGAS_GATEWAY_TOKEN (never a flag,
so it does not show in process listings). Scoring settings not listed here
(thresholds, hold timeout, content policy, judge model...) are the library's
RAGAS_TRACE_* variables. GET /health on the OTLP/HTTP port reports counters.
On start, one JSON line with the bound endpoints is printed to stdout."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the OTLP scoring gateway",
        description="Receive OTLP traces (gRPC and HTTP), score RAG traces with the Ragas "
        "metrics, forward every span to the next OTLP hop.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", metavar="PATH", default=None,
                        help="TOML config file [env RAGAS_GATEWAY_CONFIG]")
    for option in OPTIONS:
        default = "unset" if option.default is None else option.default
        # A yes/no option given alone means yes (``--allow-unauthenticated``).
        extra: dict[str, Any] = {"nargs": "?", "const": "true"} \
            if option.parse in (boolean, auto_boolean) else {}
        parser.add_argument(option.flag, dest=option.name, metavar=option.metavar,
                            default=None, **extra,
                            help=f"{option.help} [env {option.env}; default {default}]")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ragas_trace.gateway.settings import GatewaySettings

    flags = {o.name: getattr(args, o.name) for o in OPTIONS}
    config = args.config or os.environ.get("RAGAS_GATEWAY_CONFIG") or None
    try:
        settings = GatewaySettings.load(flags, config_file=config)
    except (ValueError, OSError) as exc:
        print(f"ragas-trace serve: {exc}", file=sys.stderr)
        return 2
    # The receivers and the next hop are OTLP; the judge is known once settings are read.
    if not extras.require("serve", ("otlp", *extras.judge_extras(settings.judge))):
        return extras.EXIT_MISSING_EXTRA
    from ragas_trace.allocator import return_large_buffers
    from ragas_trace.gateway.logs import configure_logging
    from ragas_trace.gateway.service import Gateway

    return_large_buffers()

    try:
        gateway = Gateway(settings)
    except (ValueError, OSError, ImportError, RuntimeError) as exc:
        print(f"ragas-trace serve: {exc}", file=sys.stderr)
        return 2
    # Once the gateway is built (a refusal to start changes nothing) and before it
    # starts serving: every thread there is now is lowered, and the judge's, the
    # receivers' and the forwarder's threads, started later, inherit it.
    priority = "normal"
    if settings.runs_at_idle_priority:
        from ragas_trace.cpu_priority import lower_to_idle

        priority = lower_to_idle()
    configure_logging(settings.log_format,
                      "debug" if getattr(args, "verbose", False) else settings.log_level)
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        logger.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    gateway.start()
    print(json.dumps({
        "event": "ready",
        "otlp_grpc": gateway.grpc.endpoint if gateway.grpc else None,
        "otlp_http": gateway.http.endpoint if gateway.http else None,
        "metrics_port": gateway.metrics.port if gateway.metrics else None,
        "cpu_priority": priority,
    }), flush=True)
    while not stop.wait(1.0):
        pass
    clean = gateway.stop(settings.shutdown_timeout_s)
    return 0 if clean else 1
