"""Take the docs' screenshot of Phoenix's trace list with the faithfulness
annotation column (run by hand; not part of the runtime or the tests).

Starts a Phoenix server from ``.venv-phoenix`` (or ``$RAGAS_TRACE_PHOENIX``) in a
temporary directory on 127.0.0.1, runs the demo against it with Phoenix
annotations on (evaluation spans off, so the list holds only the app's traces),
waits until every scored request has its annotations, then has headless Chromium
(Debian's ``chromium`` package) photograph the project's trace list.

Phoenix shows an annotation as a column of its own once a user ticks it in the
table's column menu, a choice its UI keeps in the browser's local storage. A
headless Chromium cannot click, so the page is loaded through a small loopback
proxy in front of Phoenix (same origin, so the same local storage) whose one
extra page stores that choice, as the menu would, and then opens the trace list.

    python tools/phoenix_screenshot.py docs/images/phoenix-trace-list.png
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ragas_trace.demo.runner import DemoOptions, run_demo
from ragas_trace.testing.phoenix_server import PhoenixServer, phoenix_executable

REPO = Path(__file__).resolve().parents[1]
SERVICE = "support-bot"
REQUESTS = 30
WINDOW = "1800,1300"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def wait_for_annotations(phoenix: PhoenixServer, expected: int, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if SERVICE in phoenix.project_names():
            roots = [s["context"]["span_id"] for s in phoenix.spans(SERVICE)
                     if s["parent_id"] is None]
            if roots and len(phoenix.span_annotations(SERVICE, roots)) >= expected:
                return
        time.sleep(1.0)
    raise SystemExit(f"annotations did not arrive within {timeout_s:.0f} s")


SEED_PATH = "/__ragas_trace_seed"
# Phoenix 20.26.1's table store: key arize-phoenix-tracing-<project>-<table>, zustand
# persist format; span annotation columns are keyed by annotation name and ordered
# by column id (``annotations-score-<name>``), here right after the span's name.
STORE_KEY = "arize-phoenix-tracing-{project}-traces"
COLUMNS = {"annotationColumnVisibility": {"faithfulness": True},
           "columnOrder": ["select", "statusCode", "spanKind", "name",
                           "annotations-score-faithfulness"]}


def seed_page(project_id: str, target: str) -> bytes:
    key = json.dumps(STORE_KEY.format(project=project_id))
    value = json.dumps(json.dumps({"state": COLUMNS, "version": 0}))
    return (f"<script>localStorage.setItem({key}, {value});"
            f"location.replace({json.dumps(target)});</script>").encode()


@contextmanager
def seeding_proxy(upstream_port: int, page: bytes) -> Iterator[int]:
    """A loopback proxy to Phoenix serving ``page`` at ``SEED_PATH``; yields its port."""
    class Proxy(BaseHTTPRequestHandler):
        def _relay(self) -> None:
            if self.path == SEED_PATH:
                self._reply(200, {"Content-Type": "text/html"}, page)
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            upstream.close()
            skip = {"transfer-encoding", "connection", "content-length"}
            self._reply(response.status, {k: v for k, v in response.getheaders()
                                          if k.lower() not in skip}, data)

        def _reply(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


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
        page = seed_page(project["id"], f"/projects/{project['id']}/traces")
        with seeding_proxy(phoenix.port, page) as port:
            screenshot(f"http://127.0.0.1:{port}{SEED_PATH}", out,
                       Path(tmp) / "chromium-profile")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1
                  else REPO / "docs" / "images" / "phoenix-trace-list.png"))
