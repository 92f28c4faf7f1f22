"""The LlamaIndex agent and workflow examples print, for every span they report as
scored, a number and a pass/fail label per metric (the query engine's is the README
quick start, run by ``tests/test_examples.py``) (issue 26, item 6: they printed a second, linked
evaluation span with ``faithfulness: None`` under ``status=scored``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
_SCORE_LINE = re.compile(r"^  (\w+): (\S+) \((\w+)\)$")


def scored_blocks(stdout: str) -> list[dict[str, tuple[str, str]]]:
    """Per ``NAME: status=scored`` line, its metric lines as metric -> (value, label)."""
    blocks: list[dict[str, tuple[str, str]]] = []
    current: dict[str, tuple[str, str]] | None = None
    for line in stdout.splitlines():
        if line.endswith(": status=scored"):
            current = {}
            blocks.append(current)
        elif current is not None and (match := _SCORE_LINE.match(line)):
            current[match.group(1)] = (match.group(2), match.group(3))
        else:
            current = None
    return blocks


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llamaindex_agent.py", "llamaindex_workflow.py"])
def test_every_span_shown_as_scored_has_its_scores(name: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    [block] = scored_blocks(done.stdout)  # the request's root, once
    assert set(block) == set(METRICS), done.stdout
    for value, label in block.values():
        assert 0.0 <= float(value) <= 1.0
        assert label in ("pass", "fail")
    assert "None" not in done.stdout
