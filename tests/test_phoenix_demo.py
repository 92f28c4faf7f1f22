"""``make phoenix`` end to end (``tools/phoenix_demo.py``, which the Makefile runs):
a real Phoenix from ``.venv-phoenix`` (or ``$RAGAS_TRACE_PHOENIX``) on 127.0.0.1,
the demo sent to it, and the URL it prints read back from Phoenix: the page, the
project (named after the service), its traces and the scores as span annotations.
Then ``make phoenix-stop`` ends that Phoenix by its PID and the first command
returns."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ragas_trace.testing.phoenix_server import phoenix_executable

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "phoenix_demo.py"
SERVICE = "phoenix-demo-test"
REQUESTS = 4
START_S = 420.0  # Phoenix's first start, the demo's model load, the read-back (60 s)
_TRACES_URL = re.compile(r"^Traces: (?P<url>http://127\.0\.0\.1:(?P<port>\d+)"
                         r"/projects/(?P<project>[^/\s]+)/traces)$", re.MULTILINE)


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _read_until_url(proc: subprocess.Popen[str], deadline: float) -> str:
    """What ``proc`` printed up to and including its ``Traces:`` line (a reader thread:
    a buffered pipe hides lines from ``select``)."""
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    out = ""
    while time.monotonic() < deadline and not _TRACES_URL.search(out):
        try:
            out += lines.get(timeout=1.0)
        except queue.Empty:
            if proc.poll() is not None and lines.empty():
                break
    if _TRACES_URL.search(out):
        return out
    raise AssertionError(f"no Traces: line (exit {proc.poll()}):\n{out[-3000:]}")


@pytest.mark.slow
def test_make_phoenix_prints_a_url_phoenix_serves(tmp_path: Path) -> None:
    if phoenix_executable(ROOT / ".venv-phoenix") is None:
        pytest.skip("Phoenix not installed: python3 -m venv .venv-phoenix && "
                    ".venv-phoenix/bin/pip install arize-phoenix==20.26.1")
    state = tmp_path / "phoenix"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen(
        [sys.executable, str(TOOL), "--state", str(state), "start", "--service-name", SERVICE,
         "--", "--requests", str(REQUESTS)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        out = _read_until_url(proc, time.monotonic() + START_S)
        found = _TRACES_URL.search(out)
        assert found is not None
        pid = int((state / "phoenix.pid").read_text().split()[0])

        with urllib.request.urlopen(found["url"], timeout=10) as page:  # the UI's page
            assert page.status == 200 and b"<html" in page.read().lower()
        base = f"http://127.0.0.1:{found['port']}/v1/projects/{found['project']}"
        assert _json(base)["data"]["name"] == SERVICE
        traces = _json(base + "/traces?limit=100")["data"]
        spans = _json(base + "/spans?limit=1000")["data"]
        roots = [s for s in spans if s["parent_id"] is None and s["span_kind"] != "EVALUATOR"]
        assert len(roots) == REQUESTS
        assert {r["context"]["trace_id"] for r in roots} <= {t["trace_id"] for t in traces}
        scored = [r["context"]["span_id"] for r in roots
                  if r["attributes"].get("ragas.evaluation.status") == "scored"]
        assert scored
        query = urllib.parse.urlencode({"span_ids": scored, "limit": 1000}, doseq=True)
        annotations = _json(f"{base}/span_annotations?{query}")["data"]
        faithfulness = {a["span_id"]: a["result"]["score"] for a in annotations
                        if a["name"] == "faithfulness"}
        assert set(faithfulness) == set(scored)
        assert all(0.0 <= score <= 1.0 for score in faithfulness.values())

        stopped = subprocess.run([sys.executable, str(TOOL), "--state", str(state), "stop"],
                                 capture_output=True, text=True, timeout=60, check=False)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped Phoenix (pid {pid}" in stopped.stdout
        assert proc.wait(timeout=60) == 0
        assert not (state / "phoenix.pid").exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        if proc.poll() is None:
            proc.terminate()  # its SIGTERM handler stops Phoenix too
            proc.wait(timeout=60)
