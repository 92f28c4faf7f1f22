"""The LangChain and LangGraph examples run offline, exit 0 and print a scored request
with a number for every metric."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# "faithfulness: 0.93" (langgraph_rag.py) or "'faithfulness': 0.93" (the quick starts)
_SCORE = r"'?{metric}'?: (?P<value>\S+?)[,}}\s]"


@pytest.mark.parametrize("name", ["langchain_lcel.py", "langchain_agent.py",
                                  "langgraph_rag.py"])
def test_example_prints_scores(name: str) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "scored" in done.stdout
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        found = re.search(_SCORE.format(metric=metric), done.stdout)
        assert found is not None, done.stdout
        assert 0.0 <= float(found["value"]) <= 1.0, done.stdout
