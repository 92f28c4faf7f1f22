"""Take the README's screenshots of Phoenix (run by hand; not part of the runtime or
the tests).

It does what ``make phoenix`` does, with ``tools/phoenix_demo.py``'s own functions:
a fresh ``phoenix serve`` from ``.venv-phoenix`` (or ``$RAGAS_TRACE_PHOENIX``) on
127.0.0.1 with an empty database in a temporary directory, the default demo (40
requests, project ``ragas-trace-demo``) with Phoenix annotations on, and the wait
until Phoenix holds every request and its annotations. Then headless Chromium
(Debian's ``chromium``), each time with a fresh profile and nothing set in it,
photographs two pages as a user following the guide first sees them, no click made:

- ``phoenix-trace-list.png``: the trace list URL that ``make phoenix`` prints. Phoenix
  20.26.1 shows no annotation column by default (a user ticks one in the table's
  Columns menu, a choice kept in the browser): the list shows the "Trace annotation
  scores" chart (faithfulness among its three lines) and a "+3" annotation badge
  per row;
- ``phoenix-trace.png``: the trace of the newest request whose faithfulness failed,
  at the URL a click on its row opens: its faithfulness, answer relevance and
  context relevance scores in the trace's header.

    python tools/phoenix_screenshot.py [OUT_DIR]   # default docs/images
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import phoenix_demo  # tools/ is on the path when this file runs as a script

REPO = Path(__file__).resolve().parents[1]
WINDOW = "1600,1000"
RENDER_BUDGET_MS = 30000  # virtual time for the page's GraphQL queries and charts
CHROMIUM_TIMEOUT_S = 120.0
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars")


def screenshot(url: str, out: Path, profile: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Chromium: apt-get install -y chromium")
    # A session of its own, so a hung Chromium is ended with all its helper processes.
    proc = subprocess.Popen([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             f"--window-size={WINDOW}",
                             f"--virtual-time-budget={RENDER_BUDGET_MS}",
                             f"--screenshot={out}", url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        status = proc.wait(CHROMIUM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise SystemExit(f"Chromium did not finish within {CHROMIUM_TIMEOUT_S:.0f} s") from None
    if status != 0 or not out.is_file():
        raise SystemExit(f"Chromium exited with status {status} and no {out}")


def newest_failing_trace(url: str, service: str) -> str:
    """The trace id of the newest request root whose faithfulness label is ``fail``."""
    spans = phoenix_demo.pages(f"{url}/v1/projects/{urllib.parse.quote(service)}/spans",
                              limit=1000)
    roots = [s for s in spans if s["parent_id"] is None
             and s["attributes"].get("ragas.faithfulness.label") == "fail"]
    if not roots:
        raise SystemExit("no request failed faithfulness: nothing to show in the trace view")
    return str(max(roots, key=lambda s: str(s["start_time"]))["context"]["trace_id"])


def main(out_dir: Path) -> int:
    from ragas_trace.demo.runner import DEFAULT_SERVICE
    from ragas_trace.testing.phoenix_server import phoenix_executable

    executable = phoenix_executable(REPO / ".venv-phoenix")
    if executable is None:
        raise SystemExit("Phoenix not installed: python3 -m venv .venv-phoenix && "
                         ".venv-phoenix/bin/pip install arize-phoenix==20.26.1")
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = phoenix_demo.start_phoenix(executable, Path(tmp) / "phoenix")
        try:
            problem = phoenix_demo.wait_ready(proc, url)
            if problem is not None:
                raise SystemExit(problem)
            since = time.time()
            status = phoenix_demo.send_demo(url, DEFAULT_SERVICE, [])
            if status != 0:
                raise SystemExit(f"the demo exited with status {status}")
            project, held = phoenix_demo.read_back(url, DEFAULT_SERVICE,
                                                   phoenix_demo.requests_of([]), since)
            if project is None:
                raise SystemExit(f"Phoenix shows no project {DEFAULT_SERVICE!r}")
            print(f"Phoenix holds {held}.")
            out_dir.mkdir(parents=True, exist_ok=True)
            traces = f"{url}/projects/{project['id']}/traces"
            trace_id = newest_failing_trace(url, DEFAULT_SERVICE)
            for name, page in (("phoenix-trace-list.png", traces),
                               ("phoenix-trace.png", f"{traces}/{trace_id}")):
                screenshot(page, out_dir / name, Path(tmp) / f"chromium-{name}")
                print(f"wrote {out_dir / name} ({page})")
        finally:
            phoenix_demo.terminate(proc.pid)
            proc.wait(phoenix_demo.STOP_TIMEOUT_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "images"))
