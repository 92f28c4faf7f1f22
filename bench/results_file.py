"""One JSON file per bench script under ``bench/results/``: the figures the README and
the docs quote, with the date and the machine they were measured on, so that no
number is typed twice (the docs' figures table is generated from these files).

    from results_file import write_results
    write_results("judge_cost", {"price_ratio": {"value": 0.55, "label": "...",
                                                 "baseline": "Ragas 0.4.3"}})
"""

from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, {platform.machine()}, Python "
            f"{platform.python_version()}, load {load:.1f}")


def write_results(name: str, figures: dict[str, dict[str, Any]],
                  command: str | None = None) -> Path:
    """Write ``bench/results/<name>.json``. Each figure is a dict with at least
    ``value`` and ``label``; ``unit``, ``baseline`` and ``target`` are optional."""
    for key, figure in figures.items():
        if "value" not in figure or "label" not in figure:
            raise ValueError(f"figure {key!r} needs 'value' and 'label'")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    document = {
        "script": f"bench/{name}.py",
        "command": command,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "machine": machine(),
        "figures": figures,
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
