"""Take the docs' screenshot of Phoenix's trace list with the faithfulness
annotation column (run by hand; not part of the runtime or the tests).

Starts a Phoenix server from ``.venv-phoenix`` (or ``$RAGAS_TRACE_PHOENIX``) in a
temporary directory on 127.0.0.1, runs the demo against it with Phoenix
annotations on (evaluation spans off, so the list holds only the app's traces),
waits until every scored request has its annotations, then has headless Chromium
(Debian's ``chromium`` package) photograph the project's trace list.

    python tools/phoenix_screenshot.py docs/images/phoenix-trace-list.png
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ragas_trace.demo.runner import DemoOptions, run_demo
from ragas_trace.testing.phoenix_server import PhoenixServer, phoenix_executable

REPO = Path(__file__).resolve().parents[1]
SERVICE = "support-bot"
REQUESTS = 30
WINDOW = "1600,900"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def wait_for_annotations(phoenix: PhoenixServer, expected: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        roots = [s["context"]["span_id"] for s in phoenix.spans(SERVICE)
                 if s["parent_id"] is None]
        if roots and len(phoenix.span_annotations(SERVICE, roots)) >= expected:
            return
        time.sleep(1.0)
    raise SystemExit(f"annotations did not arrive within {timeout_s:.0f} s")


def screenshot(url: str, out: Path, profile: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs Chromium: apt-get install -y chromium")
    subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                    f"--window-size={WINDOW}", "--virtual-time-budget=15000",
                    f"--screenshot={out}", url],
                   check=True, timeout=120, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(out: Path) -> int:
    executable = phoenix_executable(REPO / ".venv-phoenix")
    if executable is None:
        raise SystemExit("Phoenix not installed: python3 -m venv .venv-phoenix && "
                         ".venv-phoenix/bin/pip install arize-phoenix==20.26.1")
    with tempfile.TemporaryDirectory() as tmp, \
            PhoenixServer(executable, Path(tmp) / "phoenix") as phoenix:
        os.environ.update({"RAGAS_TRACE_ANNOTATIONS": "phoenix",
                           "PHOENIX_COLLECTOR_ENDPOINT": phoenix.url,
                           "RAGAS_TRACE_EVALUATION_SPANS": "false"})
        result = run_demo(DemoOptions(requests=REQUESTS, out_dir=None, seed=3,
                                      otlp_endpoint=phoenix.url, service_name=SERVICE,
                                      hallucination_rate=0.3))
        scored = sum(1 for row in result.rows if row.status == "scored")
        wait_for_annotations(phoenix, 3 * scored)
        (project,) = [p for p in phoenix.pages("/v1/projects") if p["name"] == SERVICE]
        out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(f"{phoenix.url}/projects/{project['id']}/traces", out,
                   Path(tmp) / "chromium-profile")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1
                  else REPO / "docs" / "images" / "phoenix-trace-list.png"))
