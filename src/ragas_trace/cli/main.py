"""``ragas-trace``: one command, a subcommand per module. Each module listed in
``_COMMANDS`` exposes ``register(subparsers)``, which adds its parser and sets
``func(args) -> int`` as the default; modules are imported only when their
subcommand runs, so ``--help`` and light commands stay fast."""

from __future__ import annotations

import argparse
import importlib
import logging
import re
import sys
from collections.abc import Sequence
from importlib import metadata

_COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("ragas_trace.cli.demo_cmd", "run a demo RAG app offline: capture, score, export"),
    "serve": ("ragas_trace.cli.serve_cmd", "run the OTLP scoring gateway (service mode)"),
    "eval": ("ragas_trace.cli.eval_cmd", "measure a judge's pairwise agreement on a data set"),
    "score": ("ragas_trace.cli.score_cmd", "score saved records (JSON lines) with a judge"),
    "alerts": ("ragas_trace.cli.alerts_cmd", "measure alert rules; print them with trace links"),
}


_LITERAL = re.compile(r"``([^`]+)``")


def plain_text(text: str | None) -> str | None:
    """A module docstring as help text: without the reST ``literal`` markup."""
    return None if text is None else _LITERAL.sub(r"\1", text)


def version() -> str:
    try:
        return metadata.version("ragas-trace")
    except metadata.PackageNotFoundError:  # run from a source tree that was not installed
        return "unknown"


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragas-trace",
        description="Ragas metrics (faithfulness, answer relevance, context relevance) on "
        "OpenTelemetry traces of RAG apps.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = next((a for a in argv if a in _COMMANDS), None)
    for name, (module, summary) in _COMMANDS.items():
        if name == wanted:
            importlib.import_module(module).register(subparsers)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    _plain_help(parser)
    return parser


def _plain_help(parser: argparse.ArgumentParser) -> None:
    """Every description, epilog and argument help of ``parser`` and of its
    subcommands at any depth (``alerts simulate``) as plain text."""
    parser.description = plain_text(parser.description)
    parser.epilog = plain_text(parser.epilog)
    for action in parser._actions:
        if isinstance(action.help, str):
            action.help = plain_text(action.help)
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                choice.help = plain_text(choice.help)
            for subparser in set(action.choices.values()):
                _plain_help(subparser)


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(args_list).parse_args(args_list)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
