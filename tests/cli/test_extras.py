"""A command run without one of its extras exits 2 before doing anything, naming the
extra and the pip line (issue 26, item 1). The missing package is simulated in a
subprocess of its own by a meta-path finder that refuses to import it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ragas_trace
from ragas_trace.cli.extras import EXTRA_MODULES, missing_message
from ragas_trace.testing.openai_server import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
DEV_CASES = ROOT / "tests" / "judges" / "local" / "dev_cases.jsonl"

_BLOCKED_RUN = """
import sys
blocked = sys.argv[1].split(",")

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in blocked):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocker())
from ragas_trace.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def run_without(blocked: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The sources under test first, whatever the working directory (a relative
    # PYTHONPATH would not reach them from cwd).
    source = str(Path(ragas_trace.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [source, *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-c", _BLOCKED_RUN, blocked, *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def records(tmp_path: Path) -> Path:
    path = tmp_path / "records.jsonl"
    path.write_text('{"question": "Why?", "contexts": ["Because."], "answer": "Because."}\n',
                    encoding="utf-8")
    return path


@pytest.mark.parametrize(("blocked", "command", "extra", "line"), [
    ("onnxruntime", "demo", "local", "pip install 'ragas-trace[langchain,local,otlp]'"),
    ("langchain_core", "demo", "langchain", "pip install 'ragas-trace[langchain,local,otlp]'"),
    ("opentelemetry.exporter", "demo", "otlp",
     "pip install 'ragas-trace[langchain,local,otlp]'"),
    ("tokenizers", "serve", "local", "pip install 'ragas-trace[local,otlp]'"),
    ("grpc", "serve", "otlp", "pip install 'ragas-trace[local,otlp]'"),
    ("onnxruntime", "score", "local", "pip install 'ragas-trace[local]'"),
    ("onnxruntime", "eval", "local", "pip install 'ragas-trace[local]'"),
])
def test_a_missing_extra_exits_2_with_the_pip_line_before_doing_anything(
        blocked: str, command: str, extra: str, line: str, tmp_path: Path,
        records: Path) -> None:
    args = {
        "demo": ["demo", "--requests", "1", "--out", str(tmp_path / "out")],
        "serve": ["serve", "--otlp-grpc", "127.0.0.1:0", "--otlp-http", "127.0.0.1:0",
                  "--forward-endpoint", "127.0.0.1:9"],
        "score": ["score", "--input", str(records), "--output", str(tmp_path / "scored.jsonl")],
        "eval": ["eval", "--dataset", str(DEV_CASES)],
    }[command]
    done = run_without(blocked, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    [message] = done.stderr.strip().splitlines()  # one line, no traceback
    assert message.startswith(f"ragas-trace {command}: the '{extra}' extra is not installed")
    assert line in message
    assert done.stdout == ""
    assert not (tmp_path / "out").exists() and not (tmp_path / "scored.jsonl").exists()


def test_the_openai_judge_needs_no_local_extra(server: FakeOpenAIServer, tmp_path: Path,
                                               records: Path) -> None:
    """Only what the chosen judge needs is required (the server's address reaches the
    subprocess through the environment)."""
    done = run_without("onnxruntime", "score", "--input", str(records), "--output", "-",
                       "--judge", "openai", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["ragas"]["status"]["faithfulness"] == "scored"


def test_every_extra_checked_is_one_pyproject_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert set(EXTRA_MODULES) <= set(declared["project"]["optional-dependencies"])


def test_nothing_is_reported_when_everything_is_installed() -> None:
    assert missing_message("demo", ("langchain", "local", "otlp")) is None
