"""The LangChain and LangGraph examples run offline, exit 0 and print a scored request."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("name", ["langchain_lcel.py", "langchain_agent.py",
                                  "langgraph_rag.py"])
def test_example_prints_scores(name: str) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "scored" in done.stdout
    faithfulness = [line for line in done.stdout.splitlines() if "faithfulness:" in line]
    assert faithfulness and "None" not in faithfulness[0]
