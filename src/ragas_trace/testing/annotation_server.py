"""``FakeAnnotationServer``: a loopback HTTP server speaking the two annotation
APIs as their publishers document them, checking what a client sends:

- Phoenix ``POST /v1/span_annotations``: ``{"data": [...]}``, each item with
  ``span_id`` (16 hex digits), ``name``, ``annotator_kind`` in LLM / CODE / HUMAN,
  optional ``result`` {label, score, explanation}, ``metadata``, ``identifier``;
  bearer token when one is configured. Replies ``{"data": []}`` (Phoenix's
  asynchronous mode).
- Langfuse ``POST /api/public/scores``: one score, basic auth
  ``public_key:secret_key``, ``traceId`` (32 hex, the OTLP trace id),
  ``observationId`` (16 hex), ``name``, numeric ``value``, ``dataType``, optional
  ``id``, ``comment``, ``metadata``. Replies ``{"id": ...}``.

A request that breaks the contract gets 400 (bad body) or 401 (bad auth) and is
recorded in ``rejected``; ``fail_next`` answers the next requests with a status."""

from __future__ import annotations

import base64
import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from ragas_trace.testing._http import LoopbackHTTPServer

_HEX16 = re.compile(r"^[0-9a-f]{16}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_PHOENIX_FIELDS = {"span_id", "name", "annotator_kind", "result", "metadata", "identifier"}
_LANGFUSE_FIELDS = {"id", "traceId", "observationId", "sessionId", "datasetRunId", "name",
                    "value", "dataType", "comment", "metadata", "configId", "environment"}


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any


def phoenix_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        return "body must be {'data': [...]}"
    for item in body["data"]:
        if not isinstance(item, dict) or set(item) - _PHOENIX_FIELDS:
            return f"unknown fields in {item!r}"
        if not _HEX16.match(str(item.get("span_id", ""))):
            return f"span_id must be 16 hex digits: {item.get('span_id')!r}"
        if not isinstance(item.get("name"), str) or item["name"] == "note":
            return "name must be a string other than 'note'"
        if item.get("annotator_kind") not in ("LLM", "CODE", "HUMAN"):
            return f"bad annotator_kind {item.get('annotator_kind')!r}"
        result = item.get("result")
        if result is not None and (not isinstance(result, dict)
                                   or set(result) - {"label", "score", "explanation"}):
            return f"bad result {result!r}"
        if result and result.get("score") is not None and not isinstance(
                result["score"], int | float):
            return "score must be a number"
    return None


def langfuse_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or set(body) - _LANGFUSE_FIELDS:
        return f"unknown fields in {body!r}"
    if not _HEX32.match(str(body.get("traceId", ""))):
        return f"traceId must be the 32-hex OTLP trace id: {body.get('traceId')!r}"
    if "observationId" in body and not _HEX16.match(str(body["observationId"])):
        return f"observationId must be the 16-hex OTLP span id: {body['observationId']!r}"
    if not isinstance(body.get("name"), str) or not body["name"]:
        return "name is required"
    if body.get("dataType", "NUMERIC") not in ("NUMERIC", "CATEGORICAL", "BOOLEAN"):
        return f"bad dataType {body.get('dataType')!r}"
    if body.get("dataType", "NUMERIC") == "NUMERIC" and (
            isinstance(body.get("value"), bool) or not isinstance(body.get("value"),
                                                                  int | float)):
        return "a NUMERIC score needs a numeric value"
    return None


class FakeAnnotationServer:
    def __init__(self, *, phoenix_api_key: str | None = None,
                 langfuse_keys: tuple[str, str] = ("pk-test", "sk-test")) -> None:
        self.phoenix_api_key = phoenix_api_key
        self.langfuse_keys = langfuse_keys
        self.received: list[Received] = []
        self.rejected: list[tuple[Received, int, str]] = []
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_next(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def phoenix_annotations(self) -> list[dict[str, Any]]:
        with self._lock:
            return [item for r in self.received if r.path.startswith("/v1/span_annotations")
                    for item in r.body["data"]]

    def langfuse_scores(self) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path == "/api/public/scores"]

    def __enter__(self) -> FakeAnnotationServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        request = Received(path, headers, body)
        with self._lock:
            injected = self._failures.pop(0) if self._failures else None
        if injected is not None:
            return injected, {"detail": "injected failure"}
        status, problem = self._check(path, headers, body)
        with self._lock:
            if problem is None:
                self.received.append(request)
            else:
                self.rejected.append((request, status, problem))
        if problem is not None:
            return status, {"detail": problem}
        if path == "/api/public/scores":
            return 200, {"id": body.get("id") or f"score-{len(self.received)}"}
        return 200, {"data": []}

    def _check(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, str | None]:
        auth = headers.get("authorization", "")
        if path.split("?")[0] == "/v1/span_annotations":
            if self.phoenix_api_key and auth != f"Bearer {self.phoenix_api_key}":
                return 401, "missing or wrong bearer token"
            return 400, phoenix_problem(body)
        if path == "/api/public/scores":
            expected = base64.b64encode(":".join(self.langfuse_keys).encode()).decode()
            if auth != f"Basic {expected}":
                return 401, "missing or wrong basic auth"
            return 400, langfuse_problem(body)
        return 404, f"no route {path}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, reply = fake._answer(self.path, headers, self.rfile.read(length))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
