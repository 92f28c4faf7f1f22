"""Writes (or, with ``--check``, checks) the generated blocks of README.md and the
pages under docs/: every table the code also knows is made from the code, so no
setting and no figure is typed twice.

A block sits between two markers, and everything between them is replaced:

    <!-- BEGIN GENERATED: figures -->
    ...
    <!-- END GENERATED: figures -->

One figure in running text (value and unit, from bench/results/NAME.json) likewise:

    grew RSS by <!-- figure: langchain_overhead/agent.rss_growth_mib -->0.5 MiB<!-- /figure -->

Sources, by block name:
    settings-setup        ragas_trace.config.SETTINGS (``setup()`` and RAGAS_TRACE_*)
    settings-judge        ragas_trace.judges.settings.SETTINGS (the OpenAI judge)
    settings-collectors   ragas_trace.collectors._settings (LangChain and LlamaIndex)
    settings-serve        ragas_trace.gateway.settings.OPTIONS (``ragas-trace serve``)
    figures               bench/results/*.json (bench/results_file.py writes them), all
    figures-headline      the same, only the HEADLINE figures (the README's short table)
    figures-from-NAME     every figure of bench/results/NAME.json (a guide's table)
    figures-sources       the same files: script, command, date, machine
    judge-report          bench/results/local_judge_report.json, one row per data set
    alert-score-mixes     the demo's local-judge scores the alert simulator replays
                          (ragas_trace/alerting/data, tools/derive_alert_scores.py)
    alert-simulation      bench/results/alert_simulation.json, one row per level/drop/rate
    alert-simulate-default  the same file: ``ragas-trace alerts simulate``'s default output
    alert-fail-rate       the same file: the fail share rule's delays and pages
    cli-help[-COMMAND]    ``ragas-trace [COMMAND] --help``, 100 columns wide
    screenshot            the Phoenix screenshot (tools/phoenix_screenshot.py), once it exists
    examples              examples/*.py, the first sentence of each one's docstring and
                          the install line it runs after
    quickstart-NAME       examples/NAME.py between its QUICK START markers, the install
                          line it runs after and the docstring's "Real model:" sentence
                          (the lines to change); a link to the script from the README,
                          its path under docs/ (the site holds no examples/)
    thresholds            the pass thresholds: the local judge's own (its
                          support_model.json) and the LLM judges' defaults

The figures tables have a verdict column: a target is met only when every run a
figure records clears it, or the one run of an ``exact`` figure (a count a re-run
reproduces); see ``verdict``.

    python tools/gen_docs.py           # rewrite stale blocks
    python tools/gen_docs.py --check   # exit 1 naming each stale block
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import functools
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
# What tools/phoenix_screenshot.py photographs after make phoenix (the README has room
# for one picture; the guide shows the trace list too).
SCREENSHOT = "docs/images/phoenix-trace.png"

_LITERAL = re.compile(r"``([^`]+)``")
_QUICK_START = re.compile(r"^# BEGIN QUICK START\n(?P<code>.*?)^# END QUICK START$",
                          re.DOTALL | re.MULTILINE)
_REAL_MODEL = re.compile(r"^Real model: (?P<text>.*?)(?:\n\n|\Z)", re.DOTALL | re.MULTILINE)
QUICK_STARTS = ("langchain_lcel", "langchain_agent", "llamaindex_query_engine")
# The README's one quick start: it runs after the README's set-up (make demo).
README_QUICK_START = "langchain_lcel"
# The line in an example's docstring that installs what it needs, from a clone.
_INSTALL = re.compile(r"^\s*(?P<line>pip install -e '\.\[(?P<extras>[\w,-]+)\]')",
                      re.MULTILINE)
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


def _judge_prices() -> str:
    """The default price table (``ragas_trace.scorer.pricing.DEFAULT_PRICES``)."""
    from ragas_trace.scorer.pricing import DEFAULT_PRICES

    lines = ["| model | input USD / 1M tokens | output USD / 1M tokens |",
             "| --- | --- | --- |"]
    for model, price in DEFAULT_PRICES.items():
        output = f"{price.output_usd:.2f}" if price.output_usd else "(embeddings)"
        lines.append(f"| `{model}` | {price.input_usd:.2f} | {output} |")
    return "\n".join(lines)


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


# The README's short table: the figures a user weighs before adding the library.
HEADLINE = (
    ("langchain_overhead", "chain.instructions.peer_ratio"),
    ("langchain_overhead", "agent.instructions.peer_ratio"),
    ("llamaindex_overhead", "query.instructions.peer_ratio"),
    ("langchain_overhead", "agent.rss_growth_mib"),
    ("app_latency", "gunicorn.sidecar.p50_ratio"),
    ("app_latency", "gunicorn.sidecar.p95_ratio"),
    ("app_latency", "uvicorn.sidecar.p50_ratio"),
    ("app_latency", "uvicorn.sidecar.p95_ratio"),
    ("app_latency", "gunicorn.sidecar.rss_mib"),
    ("judge_cost", "price_ratio"),
    ("local_judge_speed", "records_per_s_2_threads"),
    ("local_judge_report", "ragtruth (both tasks):auroc"),
    ("local_judge_report", "attributionbench:auroc"),
    ("local_judge_report", "answer_relevance:fit_holdout_auroc"),
    ("shutdown_deadlines", "sigterm_hung_judge_s"),
    ("soak", "unaccounted"),
)

_BOUND = re.compile(r"^\s*(<=|≤|<|>=|≥|>)\s*(-?[\d,]*\.?\d+)")
_WITHIN = re.compile(r"^\s*within\s+(\d+(?:\.\d+)?)\s*%")
# What scripts used to write after a target by hand ("<= 0.2 (not met)"): the verdict
# is made here now, from the runs.
_OLD_VERDICT = re.compile(r"\s*\((?:not )?met\b[^)]*\)")


def target_text(figure: dict[str, Any]) -> str:
    return _OLD_VERDICT.sub("", str(figure.get("target", "")))


def _clears(target: str, baseline: Any) -> Callable[[float], bool] | None:
    """The test a value must pass for ``target``, or None when the target is prose."""
    bound = _BOUND.match(target)
    if bound:
        op, limit = bound[1], float(bound[2].replace(",", ""))
        return {"<=": lambda v: v <= limit, "≤": lambda v: v <= limit,
                "<": lambda v: v < limit, ">=": lambda v: v >= limit,
                "≥": lambda v: v >= limit, ">": lambda v: v > limit}[op]
    within = _WITHIN.match(target)
    if within:
        share = float(within[1]) / 100
        return lambda v: abs(v - 1) <= share
    if target.strip() == "above the baseline" and isinstance(baseline, int | float):
        return lambda v: v > baseline
    try:  # a bare number is an upper bound (judge_cost's ratios)
        limit = float(target)
    except ValueError:
        return None
    return lambda v: v <= limit


def verdict(figure: dict[str, Any]) -> str:
    """Met only when a repeated measurement clears the target: every one of the
    figure's ``runs``, or the one run of an ``exact`` figure (a count a re-run
    reproduces). One run of a figure that moves with the load is not enough."""
    target = target_text(figure)
    if not target:
        return ""
    test = _clears(target, figure.get("baseline"))
    if test is None:
        return "not checked (prose target)"
    runs = figure.get("runs") or [figure["value"]]
    if not all(isinstance(r, int | float) and not isinstance(r, bool) for r in runs):
        return "not checked (no number)"
    passed = sum(1 for r in runs if test(float(r)))
    if figure.get("runs"):
        if passed == len(runs):
            return f"met in all {len(runs)} runs"
        return f"not met ({passed} of {len(runs)} runs clear it)"
    if passed == 0:
        return "not met"
    return "met" if figure.get("exact") else "one run clears it (not repeated)"


def measured(figure: dict[str, Any]) -> str:
    text = _number(figure["value"])
    if figure.get("unit"):
        text += f" {figure['unit']}"
    runs = figure.get("runs")
    if runs:
        text += f" (median; {_number(min(runs))}-{_number(max(runs))} over {len(runs)} runs)"
    return text


def figure_of(name: str, key: str) -> dict[str, Any]:
    documents = dict(results_files())
    if name not in documents or key not in documents[name]["figures"]:
        raise ValueError(f"no figure {key!r} in bench/results/{name}.json")
    figure: dict[str, Any] = documents[name]["figures"][key]
    return figure


def _table(rows: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> str:
    lines = ["| figure | measured | baseline | target | verdict | source |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, document, figure in rows:
        date = figure.get("date") or document.get("date", "")
        lines.append(
            f"| {_cell(figure['label'])} | {_cell(measured(figure))} | "
            f"{_cell(figure.get('baseline', ''))} | {_cell(target_text(figure))} | "
            f"{_cell(verdict(figure))} | `{name}` {date} |")
    return "\n".join(lines)


def _figures(*, headline_only: bool = False, only: str | None = None) -> str:
    files = results_files()
    if only is not None:
        documents = dict(files)
        if only not in documents:
            raise ValueError(f"no bench/results/{only}.json")
        return _table([(only, documents[only], figure)
                       for figure in documents[only]["figures"].values()])
    if headline_only:
        documents = dict(files)
        return _table([(name, documents[name], figure_of(name, key))
                       for name, key in HEADLINE])
    return _table([(name, document, figure) for name, document in files
                   for figure in document["figures"].values()])


def _how(label: str) -> str:
    """How a judge report row was scored, from its figure's label."""
    return ("holdout" if "holdout sources" in label else "held out" if "held out" in label
            else "cross-validated")


def _judge_report() -> str:
    """The local judge's faithfulness per labelled data set, beside its baselines."""
    path = RESULTS / "local_judge_report.json"
    if not path.exists():
        return "No report yet: run `python bench/local_judge_report.py`."
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    names = sorted({key.rsplit(":", 1)[0] for key in figures if key.count(":") == 1
                    and key.endswith(":pairwise")},
                   key=lambda n: (_how(figures[f"{n}:pairwise"]["label"]) != "cross-validated",
                                  n))
    lines = ["| data set | scored how | pairwise: judge / lexical / length | "
             "AUROC: judge / lexical / length | AUROC fitted without the set | "
             "calibration error | clean passing | hallucinated failing |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in names:
        pair, auc = figures[f"{name}:pairwise"], figures[f"{name}:auroc"]
        how = _how(pair["label"])
        unseen = figures.get(f"{name}:left_out_auroc")
        error = figures.get(f"{name}:calibration_error")
        lines.append(
            f"| {name} ({pair['pairs']} pairs) | {how} | {pair['value']:.3f} / "
            f"{pair['baseline']:.3f} / {pair['length']:.3f} | {auc['value']:.3f} / "
            f"{auc['baseline']:.3f} / {auc['length']:.3f} | "
            f"{'' if unseen is None else format(unseen['value'], '.3f')} | "
            f"{'' if error is None else format(error['value'], '.3f')} | "
            f"{figures[f'{name}:clean_pass']['value']:.2f} | "
            f"{figures[f'{name}:hallucinated_fail']['value']:.2f} |")
    relevance = []
    for key, whose in (("attributionbench_responses",
                        "AttributionBench dev's real responses (one per question)"),
                       ("halueval_right", "HaluEval's right answers (short, direct)")):
        own = figures.get(f"{key}:answer_relevance_pass_own_question")
        other = figures.get(f"{key}:answer_relevance_pass_other_question")
        if own is not None and other is not None:
            relevance.append(f"{whose}: {own['value']:.0%} pass for their own question, "
                             f"{other['value']:.0%} for another question of the set")
    if relevance:
        lines += ["", "Answer relevance of real answers: " + "; ".join(relevance) + "."]
    whole = figures.get("wikieval:answer_relevance_pass_whole")
    first = figures.get("wikieval:answer_relevance_pass_first_sentence")
    above = figures.get("wikieval:answer_relevance_whole_over_first_sentence")
    if whole is not None and first is not None and above is not None:
        lines += ["", "Answer relevance of incomplete answers (WikiEval's compound questions, "
                  "the reference answer against its first sentence alone, which answers a "
                  f"part): the whole answer scores higher in {above['value']:.0%} of pairs; "
                  f"{whole['value']:.0%} of whole answers pass, {first['value']:.0%} of "
                  "first sentences."]
    return "\n".join(lines)


def _alert_score_mixes() -> str:
    """The score samples ``ragas-trace alerts simulate`` replays by default: what the
    shipped local judge gives the demo's answers, against that judge's threshold."""
    from ragas_trace.alerting import load_scores
    from ragas_trace.judges.local import LocalJudge

    threshold = LocalJudge().thresholds["faithfulness"]
    lines = [f"| sample | scores | mean | spread (sd) | passing (>= {threshold:g}) |",
             "| --- | --- | --- | --- | --- |"]
    for kind, what in (("healthy", "healthy: the demo's default traffic"),
                       ("bad", "bad: every answer hallucinated")):
        values = load_scores(None, kind)
        mean = sum(values) / len(values)
        spread = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
        passing = sum(v >= threshold for v in values) / len(values)
        lines.append(f"| {what} | {len(values)} | {mean:.2f} | {spread:.2f} | "
                     f"{passing:.0%} |")
    return "\n".join(lines)


def _alert_simulation() -> str:
    """The shipped rules' delays and false pages (bench/alert_simulation.py)."""
    path = RESULTS / "alert_simulation.json"
    if not path.exists():
        return "No figures yet: run `python bench/alert_simulation.py`."
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from alert_simulation import markdown_table
    finally:
        sys.path.remove(str(ROOT / "bench"))
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    return str(markdown_table(figures))


def _alert_fail_rate() -> str:
    """The fail share rule's delays and pages (bench/alert_simulation.py --fail-rate)."""
    path = RESULTS / "alert_simulation.json"
    if not path.exists():
        return "No figures yet: run `python bench/alert_simulation.py --fail-rate`."
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from alert_simulation import fail_rate_table
    finally:
        sys.path.remove(str(ROOT / "bench"))
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    return str(fail_rate_table(figures))


def _alert_simulate_default() -> str:
    """What ``ragas-trace alerts simulate`` printed with its defaults (the bench's run)."""
    path = RESULTS / "alert_simulation.json"
    figure = json.loads(path.read_text(encoding="utf-8"))["figures"].get("default") \
        if path.exists() else None
    if figure is None:
        return "No run yet: run `python bench/alert_simulation.py --default-only`."
    return f"```\n{figure['output'].rstrip()}\n```"


def _figures_sources() -> str:
    lines = []
    for name, document in results_files():
        line = (f"- `{name}`: `{document.get('command') or document['script']}`, "
                f"{document.get('date', 'undated')}, {document.get('machine', 'machine unknown')}")
        earlier: dict[tuple[str, str], list[str]] = {}
        for key, figure in document["figures"].items():
            if figure.get("command"):
                earlier.setdefault((figure["command"], figure.get("date", "")), []).append(key)
        for (command, date), keys in earlier.items():
            line += (f"; kept from an earlier run, `{command}` ({date}): "
                     + ", ".join(f"`{k}`" for k in keys))
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


def example_scripts() -> list[Path]:
    """The runnable examples; ``_name.py`` files are helpers they share."""
    return [p for p in sorted((ROOT / "examples").glob("*.py")) if not p.name.startswith("_")]


def quick_start_code(script: Path) -> str:
    """The lines of ``script`` between its QUICK START markers (a whole program)."""
    match = _QUICK_START.search(script.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{script.name}: no '# BEGIN QUICK START' / '# END QUICK START' lines")
    return match["code"].rstrip("\n")


def install_line(script: Path) -> str:
    """The ``pip install -e '.[EXTRAS]'`` line of ``script``'s docstring: what it runs
    after, in a clone of the repository."""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    match = _INSTALL.search(doc)
    if match is None:
        raise ValueError(f"{script.name}: no \"pip install -e '.[EXTRAS]'\" line in the "
                         "docstring")
    return match["line"]


def _quick_start(name: str, *, linked: bool) -> str:
    script = ROOT / "examples" / f"{name}.py"
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    real = _REAL_MODEL.search(doc)
    if real is None:
        raise ValueError(f"{script.name}: no 'Real model:' sentence in the docstring")
    where = (f"[`examples/{script.name}`](examples/{script.name})" if linked
             else f"`examples/{script.name}`")
    return (f"```python\n{quick_start_code(script)}\n```\n\n"
            f"Runs offline after `{install_line(script)}` ({where}; the tests run it in a "
            f"fresh virtualenv made by that line). For a real model: "
            f"{' '.join(real['text'].split())}")


def _examples() -> str:
    lines = ["| script | what it shows | runs after |", "| --- | --- | --- |"]
    for script in example_scripts():
        doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        sentence = _LITERAL.sub(r"`\1`", first.split(". ")[0].rstrip("."))
        lines.append(f"| `{script.name}` | {_cell(sentence)} | `{install_line(script)}` |")
    return "\n".join(lines)


def _thresholds() -> str:
    """Each metric's pass mark, read from the judges: a refit of the local judge
    changes this table when ``gen_docs`` runs, never a number typed in a page."""
    from ragas_trace.judges.base import judge_thresholds
    from ragas_trace.judges.local.judge import LocalJudge
    from ragas_trace.results import DEFAULT_THRESHOLDS, Metric

    local = judge_thresholds(LocalJudge())  # what setup() and the demo label with
    lines = ["| metric | local judge (fitted: `support_model.json`, `relevance_model.json`) "
             "| LLM judges (default) |",
             "| --- | --- | --- |"]
    lines += [f"| {metric} | {local[metric]:g} | {DEFAULT_THRESHOLDS[metric]:g} |"
              for metric in Metric]
    return "\n".join(lines)


def _screenshot() -> str:
    if not (ROOT / SCREENSHOT).is_file():
        return "<!-- no screenshot yet: the block fills in once the file exists -->"
    return (f"![A demo request's trace in Phoenix after make phoenix: faithfulness, answer "
            f"relevance and context relevance in its header]({SCREENSHOT})")


GENERATORS: dict[str, Callable[[], str]] = {
    "settings-setup": _settings_setup,
    "settings-judge": _settings_judge,
    "settings-collectors": _settings_collectors,
    "settings-serve": _settings_serve,
    "judge-prices": _judge_prices,
    "figures": _figures,
    "figures-headline": lambda: _figures(headline_only=True),
    "figures-sources": _figures_sources,
    "judge-report": _judge_report,
    "alert-score-mixes": _alert_score_mixes,
    "alert-simulation": _alert_simulation,
    "alert-fail-rate": _alert_fail_rate,
    "alert-simulate-default": _alert_simulate_default,
    "screenshot": _screenshot,
    "examples": _examples,
    "thresholds": _thresholds,
    "cli-help": _cli_help(),
    **{f"cli-help-{c}": _cli_help(c) for c in ("demo", "serve", "eval", "score")},
}


def documents() -> Iterator[Path]:
    yield ROOT / "README.md"
    yield ROOT / "examples" / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))


_FROM = "figures-from-"
_QUICK = "quickstart-"
_INLINE = re.compile(r"(?P<begin><!-- figure: (?P<name>\w+)/(?P<key>[^ ]+) -->)"
                     r"(?P<body>[^<]*)(?P<end><!-- /figure -->)")


def _inline(name: str, key: str) -> str:
    figure = figure_of(name, key)
    return f"{_number(figure['value'])}{' ' + figure['unit'] if figure.get('unit') else ''}"


def render(text: str, where: str) -> str:
    """``text`` with every generated block and inline figure made afresh;
    ``ValueError`` for a block no generator knows or a figure no results file has."""
    def fresh(match: re.Match[str]) -> str:
        name = match["name"]
        generate = GENERATORS.get(name)
        if generate is None and name.startswith(_FROM):
            generate = functools.partial(_figures, only=name[len(_FROM):])
        if generate is None and name.startswith(_QUICK):
            # A link from the README (at the root); a path on the site's pages.
            generate = functools.partial(_quick_start, name[len(_QUICK):],
                                         linked=Path(where).resolve().parent == ROOT)
        if generate is None:
            raise ValueError(f"{where}: no generator for block {name!r}")
        try:
            body = generate()
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        return f"{match['begin']}{body}\n{match['end']}"

    def inline(match: re.Match[str]) -> str:
        try:
            value = _inline(match["name"], match["key"])
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        return f"{match['begin']}{value}{match['end']}"
    return _INLINE.sub(inline, _BLOCK.sub(fresh, text))


def stale_blocks(path: Path) -> list[str]:
    """Names of the blocks (and ``figure NAME/KEY`` of the inline figures) of ``path``
    that differ from what the code makes."""
    text = path.read_text(encoding="utf-8")
    fresh = render(text, str(path))
    if fresh == text:
        return []
    old = {m["name"]: m["body"] for m in _BLOCK.finditer(text)}
    stale = [m["name"] for m in _BLOCK.finditer(fresh) if old.get(m["name"]) != m["body"]]
    old_inline = [m["body"] for m in _INLINE.finditer(text)]
    stale += [f"figure {m['name']}/{m['key']}" for m, body in
              zip(_INLINE.finditer(fresh), old_inline, strict=True) if m["body"] != body]
    return stale


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
