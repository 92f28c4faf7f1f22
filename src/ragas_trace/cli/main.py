"""``ragas-trace``: one command, a subcommand per module. Each module listed in
``_COMMANDS`` exposes ``register(subparsers)``, which adds its parser and sets
``func(args) -> int`` as the default; modules are imported only when their
subcommand runs, so ``--help`` and light commands stay fast."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

_COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("ragas_trace.cli.demo_cmd", "run a demo RAG app offline: capture, score, export"),
    "serve": ("ragas_trace.cli.serve_cmd", "run the OTLP scoring gateway (service mode)"),
    "eval": ("ragas_trace.cli.eval_cmd", "measure a judge's pairwise agreement on a data set"),
    "score": ("ragas_trace.cli.score_cmd", "score saved records (JSON lines) with a judge"),
    "alerts": ("ragas_trace.cli.alerts_cmd", "measure alert rules on simulated traffic"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragas-trace",
        description="Ragas metrics (faithfulness, answer relevance, context relevance) on "
        "OpenTelemetry traces of RAG apps.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = next((a for a in argv if a in _COMMANDS), None)
    for name, (module, summary) in _COMMANDS.items():
        if name == wanted:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(args_list).parse_args(args_list)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
