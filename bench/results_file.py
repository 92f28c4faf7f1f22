"""One JSON file per bench script under ``bench/results/``: the figures the README and
the docs quote, with the command that produced them (read from ``sys.argv``, never
typed), the date and the machine, so that no number is typed twice (the docs'
figures tables are generated from these files by ``tools/gen_docs.py``).

    from results_file import write_results
    write_results("judge_cost", {"price_ratio": {"value": 0.55, "label": "...",
                                                 "baseline": "Ragas 0.4.3", "target": "<= 0.6",
                                                 "exact": True}})

A figure is a dict with at least ``value`` and ``label``; optional: ``unit``,
``baseline``, ``target`` (``"<= 0.2"``, ``">= 0.80"``, ...), ``runs`` (the value of
every repeated run, when the figure moves with the machine's load: ``value`` is then
their median) and ``exact`` (the measurement is a count that a re-run reproduces, so
one run is enough to judge the target). ``tools/gen_docs.py`` calls a target met only
when every run clears it, or the one run of an exact figure does.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = RESULTS.parents[1]


def cpu() -> str:
    """The CPU's model, and whether it has VNNI: the local judge's int8 kernels run
    about twice as fast with it, so timings are compared on like CPUs only."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.machine()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), platform.machine())
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    vnni = any(f in flags for f in ("avx512_vnni", "avx_vnni"))
    return f"{model} ({'VNNI' if vnni else 'no VNNI'})" if flags else model


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, {cpu()}, {platform.machine()}, Python "
            f"{platform.python_version()}, load {load:.1f}")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command that is running, as it could be typed again from the checkout."""
    args = list(sys.argv if argv is None else argv)
    script = Path(args[0]).resolve() if args else Path("?")
    shown = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
    return shlex.join(["python", str(shown), *args[1:]])


def repeated(runs: Sequence[float], digits: int) -> dict[str, Any]:
    """``value`` (the median) and ``runs`` of a figure measured several times."""
    return {"value": round(statistics.median(runs), digits),
            "runs": [round(r, digits) for r in runs]}


def write_results(name: str, figures: dict[str, dict[str, Any]], command: str | None = None,
                  *, merge: bool = False) -> Path:
    """Write ``bench/results/<name>.json`` with the command read from ``sys.argv``.

    ``merge=True`` keeps the figures of the file that this run did not measure (a run
    of one shape keeps the other's), each tagged with the command and date of the run
    that made it. ``command`` is for scripts that still pass one: it must be the
    running command, else a warning says which one is recorded."""
    for key, figure in figures.items():
        if "value" not in figure or "label" not in figure:
            raise ValueError(f"figure {key!r} needs 'value' and 'label'")
    running = command_line()
    if command is not None and shlex.split(command)[1:] != shlex.split(running)[1:]:
        print(f"results_file: recording the running command {running!r}, not {command!r}",
              file=sys.stderr)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    kept: dict[str, dict[str, Any]] = {}
    if merge and path.exists():
        old = json.loads(path.read_text(encoding="utf-8"))
        for key, figure in old.get("figures", {}).items():
            if key not in figures:
                kept[key] = {"command": old.get("command"), "date": old.get("date"),
                             "machine": old.get("machine"), **figure}
    document = {
        "script": f"bench/{name}.py",
        "command": running,
        "date": today,
        "machine": machine(),
        "figures": {**kept, **figures},
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
