"""Writes (or, with ``--check``, checks) the generated blocks of README.md and the
pages under docs/: every table the code also knows is made from the code, so no
setting and no figure is typed twice.

A block sits between two markers, and everything between them is replaced:

    <!-- BEGIN GENERATED: figures -->
    ...
    <!-- END GENERATED: figures -->

Sources, by block name:
    settings-setup        ragas_trace.config.SETTINGS (``setup()`` and RAGAS_TRACE_*)
    settings-judge        ragas_trace.judges.settings.SETTINGS (the OpenAI judge)
    settings-collectors   ragas_trace.collectors._settings (LangChain and LlamaIndex)
    settings-serve        ragas_trace.gateway.settings.OPTIONS (``ragas-trace serve``)
    figures               bench/results/*.json (bench/results_file.py writes them)
    figures-with-targets  the same, only the figures that have a target
    figures-sources       the same files: script, command, date, machine
    judge-report          bench/results/local_judge_report.json, one row per data set
    cli-help[-COMMAND]    ``ragas-trace [COMMAND] --help``, 100 columns wide
    screenshot            the Phoenix screenshot, once docs/images/phoenix-trace-list.png exists
    examples              examples/*.py and the first sentence of each one's docstring

    python tools/gen_docs.py           # rewrite stale blocks
    python tools/gen_docs.py --check   # exit 1 naming each stale block
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
HELP_COLUMNS = "100"
SCREENSHOT = "docs/images/phoenix-trace-list.png"

_LITERAL = re.compile(r"``([^`]+)``")
_BLOCK = re.compile(
    r"(?P<begin><!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)"
    r"(?P<body>.*?)"
    r"(?P<end><!-- END GENERATED: (?P=name) -->)", re.DOTALL)


def _settings_setup() -> str:
    from ragas_trace._settings import settings_table
    from ragas_trace.config import SETTINGS

    return settings_table(SETTINGS)


def _settings_judge() -> str:
    from ragas_trace._settings import settings_table
    from ragas_trace.judges.settings import SETTINGS

    return settings_table(SETTINGS)


def _settings_collectors() -> str:
    from ragas_trace._settings import settings_table
    from ragas_trace.collectors._settings import (
        CAPTURE_VECTOR_STORES,
        MAX_DOCUMENTS,
        MAX_OPEN_RUNS,
        RUN_TTL_S,
    )

    return settings_table((MAX_DOCUMENTS, RUN_TTL_S, MAX_OPEN_RUNS, CAPTURE_VECTOR_STORES))


def _settings_serve() -> str:
    from ragas_trace._settings import settings_table
    from ragas_trace.gateway.settings import OPTIONS

    return settings_table(OPTIONS, as_flags=True)


def results_files() -> list[tuple[str, dict[str, Any]]]:
    """(name, document) of every committed bench result, by name."""
    return [(path.stem, json.loads(path.read_text(encoding="utf-8")))
            for path in sorted(RESULTS.glob("*.json"))]


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1000:
        value = int(value)
    return format(value, ",")


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _figures(*, with_target_only: bool = False) -> str:
    lines = ["| figure | measured | baseline | target | source |",
             "| --- | --- | --- | --- | --- |"]
    for name, document in results_files():
        for figure in document["figures"].values():
            if with_target_only and not figure.get("target"):
                continue
            measured = _number(figure["value"])
            if figure.get("unit"):
                measured += f" {figure['unit']}"
            lines.append(
                f"| {_cell(figure['label'])} | {_cell(measured)} | "
                f"{_cell(figure.get('baseline', ''))} | {_cell(figure.get('target', ''))} | "
                f"`{name}` {document.get('date', '')} |")
    return "\n".join(lines)


def _judge_report() -> str:
    """The local judge's faithfulness per labelled data set, beside its baselines."""
    path = RESULTS / "local_judge_report.json"
    if not path.exists():
        return "No report yet: run `python bench/local_judge_report.py`."
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    names = sorted({key.rsplit(":", 1)[0] for key in figures if key.count(":") == 1
                    and key.endswith(":pairwise")},
                   key=lambda n: ("held out" in figures[f"{n}:pairwise"]["label"], n))
    lines = ["| data set | scored how | pairwise: judge / lexical / length | "
             "AUROC: judge / lexical / length | clean passing | hallucinated failing |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name in names:
        pair, auc = figures[f"{name}:pairwise"], figures[f"{name}:auroc"]
        how = "held out" if "held out" in pair["label"] else "cross-validated"
        lines.append(
            f"| {name} ({pair['pairs']} pairs) | {how} | {pair['value']:.3f} / "
            f"{pair['baseline']:.3f} / {pair['length']:.3f} | {auc['value']:.3f} / "
            f"{auc['baseline']:.3f} / {auc['length']:.3f} | "
            f"{figures[f'{name}:clean_pass']['value']:.2f} | "
            f"{figures[f'{name}:hallucinated_fail']['value']:.2f} |")
    return "\n".join(lines)


def _figures_sources() -> str:
    lines = []
    for name, document in results_files():
        line = (f"- `{name}`: `{document.get('command') or document['script']}`, "
                f"{document.get('date', 'undated')}, {document.get('machine', 'machine unknown')}")
        if document.get("note"):
            line += f". {document['note']}"
        lines.append(line)
    return "\n".join(lines)


def _cli_help(*command: str) -> Callable[[], str]:
    def render() -> str:
        from ragas_trace.cli.main import main

        out = io.StringIO()
        previous = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = HELP_COLUMNS  # argparse wraps to the terminal's width
        try:
            with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
                main([*command, "--help"])
        finally:
            if previous is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = previous
        return f"```text\n{out.getvalue().rstrip()}\n```"
    return render


def _examples() -> str:
    lines = ["| script | what it shows |", "| --- | --- |"]
    for script in sorted((ROOT / "examples").glob("*.py")):
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        sentence = _LITERAL.sub(r"`\1`", first.split(". ")[0].rstrip("."))
        lines.append(f"| `{script.name}` | {_cell(sentence)} |")
    return "\n".join(lines)


def _screenshot() -> str:
    if not (ROOT / SCREENSHOT).is_file():
        return "<!-- no screenshot yet: the block fills in once the file exists -->"
    return f"![RAG traces with their ragas.* scores in Phoenix]({SCREENSHOT})"


GENERATORS: dict[str, Callable[[], str]] = {
    "settings-setup": _settings_setup,
    "settings-judge": _settings_judge,
    "settings-collectors": _settings_collectors,
    "settings-serve": _settings_serve,
    "figures": _figures,
    "figures-with-targets": lambda: _figures(with_target_only=True),
    "figures-sources": _figures_sources,
    "judge-report": _judge_report,
    "screenshot": _screenshot,
    "examples": _examples,
    "cli-help": _cli_help(),
    **{f"cli-help-{c}": _cli_help(c) for c in ("demo", "serve", "eval", "score")},
}


def documents() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield ROOT / "examples" / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))


def render(text: str, where: str) -> str:
    """``text`` with every generated block made afresh; ``ValueError`` for a block
    no generator knows."""
    def fresh(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in GENERATORS:
            raise ValueError(f"{where}: no generator for block {name!r}")
        return f"{match['begin']}{GENERATORS[name]()}\n{match['end']}"
    return _BLOCK.sub(fresh, text)


def stale_blocks(path: Path) -> list[str]:
    """Names of the blocks of ``path`` that differ from what the code makes."""
    text = path.read_text(encoding="utf-8")
    fresh = render(text, str(path))
    if fresh == text:
        return []
    old = {m["name"]: m["body"] for m in _BLOCK.finditer(text)}
    return [m["name"] for m in _BLOCK.finditer(fresh) if old.get(m["name"]) != m["body"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a generated block is stale")
    args = parser.parse_args(argv)
    stale = 0
    for path in documents():
        names = stale_blocks(path)
        if not names:
            continue
        stale += len(names)
        shown = path.relative_to(ROOT)
        if args.check:
            print(f"{shown}: stale generated block(s): {', '.join(names)}", file=sys.stderr)
        else:
            path.write_text(render(path.read_text(encoding="utf-8"), str(path)),
                            encoding="utf-8")
            print(f"{shown}: regenerated {', '.join(names)}")
    if args.check and stale:
        print("run: python tools/gen_docs.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
