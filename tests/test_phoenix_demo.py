"""``make phoenix`` end to end (``tools/phoenix_demo.py``, which the Makefile runs):
a real Phoenix from ``.venv-phoenix`` (or ``$RAGAS_TRACE_PHOENIX``) on 127.0.0.1,
the default 40-request demo sent to it, and the URL it prints read back from
Phoenix: the page, the project (named after the service), its traces and the scores
as span annotations, which agree, request by request, with the table the demo
printed in the terminal and with the local judge's own thresholds. Then ``make
phoenix-stop`` ends that Phoenix by its PID and the first command returns."""

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

from ragas_trace.demo.report import shown_score
from ragas_trace.testing.phoenix_server import phoenix_executable

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "phoenix_demo.py"
SERVICE = "phoenix-demo-test"
REQUESTS = 40  # what make phoenix sends
START_S = 480.0  # Phoenix's first start, the demo's model load, the read-back (60 s)
_TRACES_URL = re.compile(r"^Traces: (?P<url>http://127\.0\.0\.1:(?P<port>\d+)"
                         r"/projects/(?P<project>[^/\s]+)/traces)$", re.MULTILINE)
_LAST_LINE = "Phoenix keeps running"
METRIC_COLUMNS = {"faithfulness": "faith", "answer_relevance": "ans-rel",
                  "context_relevance": "ctx-rel"}


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _read_until_url(proc: subprocess.Popen[str], deadline: float) -> str:
    """What ``proc`` printed up to and including its ``Phoenix keeps running`` line,
    after the URL (a reader thread: a buffered pipe hides lines from ``select``)."""
    assert proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
    out = ""
    while time.monotonic() < deadline and _LAST_LINE not in out:
        try:
            out += lines.get(timeout=1.0)
        except queue.Empty:
            if proc.poll() is not None and lines.empty():
                break
    if _TRACES_URL.search(out) and _LAST_LINE in out:
        return out
    raise AssertionError(f"no Traces: line (exit {proc.poll()}):\n{out[-3000:]}")


def terminal_table(out: str) -> list[dict[str, str]]:
    """The demo's table as printed: per row the question cell and each metric's cell
    (``0.66 ✓``, ``0.02 ✗`` or ``-``), cut at the header's columns."""
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.lstrip().startswith("# question"))
    header = lines[top]
    ends = {m: header.index(column) + len(column) for m, column in METRIC_COLUMNS.items()}
    first = min(ends.values()) - 8
    rows = []
    for line in lines[top + 2:]:
        if not re.match(r"^\s*\d+ ", line):
            break
        row = {m: line[end - 8:end].strip() for m, end in ends.items()}
        row["question"] = line[4:first].strip()
        rows.append(row)
    return rows


def test_terminal_table_is_read_by_its_header_columns() -> None:
    from ragas_trace.demo.report import RequestRow, render_table
    from ragas_trace.results import Metric

    row = RequestRow("When was Marrowick founded?", "In 1642.", "scored",
                     {Metric.FAITHFULNESS: None, Metric.ANSWER_RELEVANCE: 0.5,
                      Metric.CONTEXT_RELEVANCE: 0.25},
                     {Metric.FAITHFULNESS: None, Metric.ANSWER_RELEVANCE: "fail",
                      Metric.CONTEXT_RELEVANCE: "pass"}, ())
    parsed = terminal_table(f"noise\n{render_table([row, row])}\nafter\n")
    assert parsed == [{"question": "When was Marrowick founded?", "faithfulness": "-",
                       "answer_relevance": "0.50 ✗", "context_relevance": "0.25 ✓"}] * 2


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
        assert "Columns -> faithfulness" in out  # where the scores are, beside the URL

        # Every request's annotations say what the terminal's table said, and label
        # with the local judge's own thresholds.
        from ragas_trace.judges.local.judge import LocalJudge

        thresholds = LocalJudge().thresholds
        table = terminal_table(out)
        assert len(table) == REQUESTS
        by_span = {(a["span_id"], a["name"]): a["result"] for a in annotations}
        ordered = sorted(roots, key=lambda r: str(r["start_time"]))
        for row, root in zip(table, ordered, strict=True):
            assert root["attributes"]["input.value"].startswith(row["question"].rstrip("…"))
            for metric in METRIC_COLUMNS:
                result = by_span[(root["context"]["span_id"], metric)]
                if row[metric] == "-":
                    assert result["score"] is None, (row, metric, result)
                    continue
                value, mark = row[metric].split()
                assert shown_score(result["score"], result["label"]) == value, \
                    (row, metric, result)
                assert result["label"] == {"✓": "pass", "✗": "fail"}[mark], (row, metric)
                assert result["label"] == ("pass" if result["score"] >= thresholds[metric]
                                           else "fail"), (row, metric, result)

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
