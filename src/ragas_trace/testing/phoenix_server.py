"""A real Arize Phoenix server (``pip install arize-phoenix`` in a virtualenv of its
own, so the environment under test holds only what the library needs) on
127.0.0.1, for end-to-end tests and the docs' screenshot, plus the few reads they
need (REST, and GraphQL for document annotations, which REST cannot read).

Phoenix's gRPC receiver listens on all interfaces and has no host setting, so its
port is one found free on all of them; the HTTP server (UI, REST, OTLP/HTTP at
``/v1/traces``) is bound to 127.0.0.1. Its database lives in a working directory
the caller owns; telemetry is off."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ENV_EXECUTABLE = "RAGAS_TRACE_PHOENIX"


def phoenix_executable(default_venv: Path) -> Path | None:
    """``$RAGAS_TRACE_PHOENIX`` (the ``phoenix`` program or its virtualenv), else
    ``default_venv/bin/phoenix``; ``None`` when neither exists."""
    given = os.environ.get(ENV_EXECUTABLE, "").strip()
    candidate = Path(given) if given else default_venv
    if candidate.is_dir():
        candidate = candidate / "bin" / "phoenix"
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class PhoenixServer:
    """``with PhoenixServer(exe, workdir) as px:`` starts ``phoenix serve`` and waits
    until ``/healthz`` answers (at most ``start_timeout_s``); leaving stops it."""

    def __init__(self, executable: Path, working_dir: Path, *,
                 start_timeout_s: float = 180.0) -> None:
        self.executable = executable
        self.working_dir = working_dir
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.grpc_port = free_port("0.0.0.0")
        self.startup_s = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path = working_dir / "phoenix.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PhoenixServer:
        self.working_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(self.working_dir),
               "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(self.port),
               "PHOENIX_GRPC_PORT": str(self.grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false"}
        started = time.monotonic()
        with open(self._log_path, "ab") as log:
            self._proc = subprocess.Popen([str(self.executable), "serve"], env=env,
                                          stdout=log, stderr=subprocess.STDOUT)
        deadline = started + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"phoenix exited with {self._proc.returncode}:\n"
                                   f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2):
                    self.startup_s = time.monotonic() - started
                    return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"phoenix not up after {self.start_timeout_s:.0f} s:\n"
                           f"{self.log_tail()}")

    def restart(self) -> PhoenixServer:
        """Stop and start again on the same ports and database (an outage)."""
        self.stop()
        return self.start()

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(10)

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self._log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def __enter__(self) -> PhoenixServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- REST reads -------------------------------------------------------------------

    def get(self, path: str, **query: Any) -> Any:
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query, doseq=True)
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())

    def pages(self, path: str, **query: Any) -> list[dict[str, Any]]:
        """Every item of a paginated list endpoint."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = self.get(path, **query, **({"cursor": cursor} if cursor else {}))
            items.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def project_names(self) -> set[str]:
        return {p["name"] for p in self.pages("/v1/projects")}

    def spans(self, project: str) -> list[dict[str, Any]]:
        return self.pages(f"/v1/projects/{urllib.parse.quote(project)}/spans", limit=1000)

    def traces(self, project: str) -> list[dict[str, Any]]:
        return self.pages(f"/v1/projects/{urllib.parse.quote(project)}/traces", limit=1000)

    def span_annotations(self, project: str, span_ids: list[str]) -> list[dict[str, Any]]:
        return self.pages(f"/v1/projects/{urllib.parse.quote(project)}/span_annotations",
                          span_ids=span_ids, limit=1000)

    def trace_annotations(self, project: str, trace_ids: list[str]) -> list[dict[str, Any]]:
        return self.pages(f"/v1/projects/{urllib.parse.quote(project)}/trace_annotations",
                          trace_ids=trace_ids, limit=1000)

    def annotation_configs(self) -> list[dict[str, Any]]:
        return self.pages("/v1/annotation_configs", limit=100)

    def graphql(self, query: str, **variables: Any) -> Any:
        request = urllib.request.Request(
            self.url + "/graphql", method="POST",
            data=json.dumps({"query": query, "variables": variables}).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.loads(response.read())
        if reply.get("errors"):
            raise RuntimeError(f"graphql errors: {reply['errors']}")
        return reply["data"]

    def document_annotations(self, span_id: str) -> dict[str, Any]:
        """A RETRIEVER span's document annotations and the retrieval metrics Phoenix
        computes from them (no REST read exists for these)."""
        data = self.graphql(
            "query($id: String!) { getSpanByOtelId(spanId: $id) {"
            " documentEvaluations { name documentPosition score label explanation }"
            " documentRetrievalMetrics { evaluationName ndcg precision hit } } }", id=span_id)
        span = data["getSpanByOtelId"]
        return span if isinstance(span, dict) else {"documentEvaluations": [],
                                                     "documentRetrievalMetrics": []}
