"""``FakeAnnotationServer``: a loopback HTTP server speaking the annotation APIs as
their publishers document them, checking strictly what a client sends.

Phoenix (its REST API, as 20.26.1 serves it), bearer token when one is configured:

- ``POST /v1/span_annotations``, ``/v1/trace_annotations``, ``/v1/document_annotations``
  (``?sync=true`` or not): ``{"data": [...]}``, each item with ``span_id`` (16 hex) or
  ``trace_id`` (32 hex), ``name`` (not ``note``), ``annotator_kind`` in LLM / CODE /
  HUMAN, optional ``result`` {label, score, explanation}, ``metadata``,
  ``identifier`` (none on document annotations, which need ``document_position``).
  In sync mode a span or trace in ``missing`` gets Phoenix's 404 naming the ids, and
  the reply lists one id per stored annotation; otherwise ``{"data": []}``.
- ``GET /v1/annotation_configs/{name}`` (404 when absent) and
  ``POST /v1/annotation_configs`` (a continuous config; 409 on a taken name).

Langfuse (its published OpenAPI reference), basic auth ``public_key:secret_key``:

- ``POST /api/public/ingestion``: ``{"batch": [event], "metadata"?}``, each event
  ``{id, timestamp (ISO 8601, ms), type, body, metadata?}``; a ``score-create`` body
  has only ScoreBody's fields, ``name`` and ``value`` required, ``traceId`` 32 hex,
  ``observationId`` 16 hex, a NUMERIC value a number. Replies 207
  ``{"successes": [{id, status}], "errors": [{id, status, message}]}``; an event
  that breaks the contract is an error of its own (400), as Langfuse answers
  input errors. ``fail_items`` makes the next events fail with a status.
- ``POST /api/public/otel/v1/traces``: OTLP/HTTP protobuf, with basic auth and
  ``x-langfuse-ingestion-version: 4``.

A request that breaks the contract gets 400 (bad body), 401 (bad auth) or 404 and
is recorded in ``rejected``; ``fail_next`` answers the next requests with a status."""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from typing import Any

from ragas_trace.testing._http import LoopbackHTTPServer

_HEX16 = re.compile(r"^[0-9a-f]{16}$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3,6}(Z|[+-]\d\d:\d\d)$")
_ANNOTATION_FIELDS = {"name", "annotator_kind", "result", "metadata", "identifier"}
_TARGETS = {"/v1/span_annotations": ("span_id", _HEX16),
            "/v1/trace_annotations": ("trace_id", _HEX32),
            "/v1/document_annotations": ("span_id", _HEX16)}
_CONFIG_FIELDS = {"name", "type", "description", "optimization_direction", "lower_bound",
                  "upper_bound"}
_EVENT_FIELDS = {"id", "timestamp", "type", "body", "metadata"}
_EVENT_TYPES = {"trace-create", "score-create", "span-create", "span-update",
                "generation-create", "generation-update", "event-create", "sdk-log",
                "observation-create", "observation-update"}
_SCORE_FIELDS = {"id", "traceId", "sessionId", "observationId", "datasetRunId", "name",
                 "environment", "value", "comment", "metadata", "dataType", "configId"}
INGESTION = "/api/public/ingestion"
LANGFUSE_OTLP = "/api/public/otel/v1/traces"


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    query: dict[str, list[str]] = field(default_factory=dict)


def phoenix_problem(path: str, body: Any) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        return "body must be {'data': [...]}"
    id_field, pattern = _TARGETS[path]
    document = path == "/v1/document_annotations"
    allowed = _ANNOTATION_FIELDS | {id_field} | ({"document_position"} if document else set())
    for item in body["data"]:
        if not isinstance(item, dict) or set(item) - allowed:
            return f"unknown fields in {item!r}"
        if not pattern.match(str(item.get(id_field, ""))):
            return f"{id_field} must be {pattern.pattern}: {item.get(id_field)!r}"
        if not isinstance(item.get("name"), str) or item["name"] == "note":
            return "name must be a string other than 'note'"
        if item.get("annotator_kind") not in ("LLM", "CODE", "HUMAN"):
            return f"bad annotator_kind {item.get('annotator_kind')!r}"
        if document and (str(item.get("identifier", "")).strip()
                         or not isinstance(item.get("document_position"), int)):
            return "a document annotation takes a document_position and no identifier"
        result = item.get("result")
        if result is not None and (not isinstance(result, dict)
                                   or set(result) - {"label", "score", "explanation"}):
            return f"bad result {result!r}"
        if result and result.get("score") is not None and not isinstance(
                result["score"], int | float):
            return "score must be a number"
    return None


def config_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or set(body) - _CONFIG_FIELDS:
        return f"unknown fields in {body!r}"
    if body.get("type") != "CONTINUOUS" or body.get("optimization_direction") not in (
            "MAXIMIZE", "MINIMIZE", "NONE"):
        return "a CONTINUOUS config with an optimization_direction"
    if not isinstance(body.get("name"), str) or body["name"] == "note":
        return "name must be a string other than 'note'"
    return None


def score_problem(body: Any) -> str | None:
    if not isinstance(body, dict) or set(body) - _SCORE_FIELDS:
        return f"unknown fields in {body!r}"
    if "traceId" in body and not _HEX32.match(str(body["traceId"])):
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
    if "comment" in body and not isinstance(body["comment"], str):
        return "comment must be a string"
    return None


def event_problem(event: Any) -> str | None:
    if not isinstance(event, dict) or set(event) - _EVENT_FIELDS:
        return f"unknown event fields in {event!r}"
    if not isinstance(event.get("id"), str) or not event["id"]:
        return "event id is required"
    stamp = event.get("timestamp")
    if not isinstance(stamp, str) or not _TIMESTAMP.match(stamp):
        return f"timestamp must be ISO 8601 with milliseconds: {stamp!r}"
    try:
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return f"timestamp is no date: {stamp!r}"
    if event.get("type") not in _EVENT_TYPES:
        return f"bad event type {event.get('type')!r}"
    if event["type"] != "score-create":
        return "this fake takes score-create events only"
    return score_problem(event.get("body"))


class FakeAnnotationServer:
    def __init__(self, *, phoenix_api_key: str | None = None,
                 langfuse_keys: tuple[str, str] = ("pk-test", "sk-test")) -> None:
        self.phoenix_api_key = phoenix_api_key
        self.langfuse_keys = langfuse_keys
        self.received: list[Received] = []
        self.rejected: list[tuple[Received, int, str]] = []
        self.configs: dict[str, dict[str, Any]] = {}
        self.missing: set[str] = set()  # span / trace ids Phoenix does not have yet
        self.scores: dict[str, dict[str, Any]] = {}  # Langfuse's, upserted by body id
        self.item_errors: list[tuple[str, int]] = []  # (event id, status) answered
        self._failures: list[int] = []
        self._item_failures: list[int] = []
        self._lock = threading.Lock()
        self._server = LoopbackHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def fail_next(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def fail_items(self, status: int, times: int = 1) -> None:
        """The next ``times`` Langfuse events fail with ``status`` inside a 207."""
        with self._lock:
            self._item_failures.extend([status] * times)

    def phoenix_annotations(self, path: str = "/v1/span_annotations") -> list[dict[str, Any]]:
        with self._lock:
            return [item for r in self.received if r.path == path
                    for item in r.body["data"]]

    def langfuse_events(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e for r in self.received if r.path == INGESTION for e in r.body["batch"]]

    def requests(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path == path]

    def __enter__(self) -> FakeAnnotationServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, method: str, target: str, headers: dict[str, str],
                raw: bytes) -> tuple[int, Any]:
        parsed = urllib.parse.urlsplit(target)
        path, query = parsed.path, urllib.parse.parse_qs(parsed.query)
        body: Any
        if path == LANGFUSE_OTLP:
            body = raw
        else:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
        request = Received(path, headers, body, query)
        with self._lock:
            injected = self._failures.pop(0) if self._failures else None
        if injected is not None:
            return injected, {"detail": "injected failure"}
        status, problem = self._check(method, path, headers, body)
        if problem is not None:
            with self._lock:
                self.rejected.append((request, status, problem))
            return status, {"detail": problem}
        with self._lock:
            self.received.append(request)
            return self._reply(method, path, query, body)

    def _check(self, method: str, path: str, headers: dict[str, str],
               body: Any) -> tuple[int, str | None]:
        auth = headers.get("authorization", "")
        if path in _TARGETS or path.startswith("/v1/annotation_configs"):
            if self.phoenix_api_key and auth != f"Bearer {self.phoenix_api_key}":
                return 401, "missing or wrong bearer token"
            if path in _TARGETS:
                return 400, phoenix_problem(path, body) if method == "POST" else "POST only"
            if method == "POST":
                return 400, config_problem(body)
            return 404, None if method == "GET" else "no such method"
        if path in (INGESTION, LANGFUSE_OTLP):
            expected = base64.b64encode(":".join(self.langfuse_keys).encode()).decode()
            if auth != f"Basic {expected}":
                return 401, "missing or wrong basic auth"
            if path == LANGFUSE_OTLP:
                if headers.get("x-langfuse-ingestion-version") != "4":
                    return 400, "x-langfuse-ingestion-version: 4 is required"
                return 400, None if headers.get("content-type") == (
                    "application/x-protobuf") else "OTLP protobuf expected"
            if not isinstance(body, dict) or set(body) - {"batch", "metadata"} or (
                    not isinstance(body.get("batch"), list)):
                return 400, "body must be {'batch': [...]}"
            return 400, None
        return 404, f"no route {path}"

    def _reply(self, method: str, path: str, query: dict[str, list[str]],
               body: Any) -> tuple[int, Any]:
        """Under the lock: the answer to a request that keeps the contract."""
        if path.startswith("/v1/annotation_configs"):
            if method == "GET":
                name = urllib.parse.unquote(path.rsplit("/", 1)[-1])
                if name not in self.configs:
                    return 404, {"detail": "Annotation configuration not found"}
                return 200, {"data": self.configs[name]}
            if body["name"] in self.configs:
                return 409, {"detail": "The name of the annotation configuration is taken"}
            self.configs[body["name"]] = {**body, "id": f"config-{len(self.configs)}"}
            return 200, {"data": self.configs[body["name"]]}
        if path in _TARGETS:
            if query.get("sync") != ["true"]:
                return 200, {"data": []}
            id_field = _TARGETS[path][0]
            absent = sorted({item[id_field] for item in body["data"]} & self.missing)
            if absent:
                self.received.pop()  # refused as a whole: nothing stored
                kind = "Traces" if id_field == "trace_id" else "Spans"
                return 404, {"detail": f"{kind} with IDs {', '.join(absent)} do not exist."}
            return 200, {"data": [{"id": f"a{i}"} for i in range(len(body["data"]))]}
        if path == LANGFUSE_OTLP:
            return 200, {}
        successes, errors = [], []
        for event in body["batch"]:
            event_id = event.get("id") if isinstance(event, dict) else None
            problem = event_problem(event)
            status = self._item_failures.pop(0) if self._item_failures else None
            if problem is not None or status is not None:
                errors.append({"id": str(event_id), "status": status or 400,
                               "message": problem or "injected failure"})
                self.item_errors.append((str(event_id), status or 400))
                continue
            self.scores[str(event["body"].get("id") or event_id)] = {
                **event["body"], "timestamp": event["timestamp"]}
            successes.append({"id": event_id, "status": 201})
        return 207, {"successes": successes, "errors": errors}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self._serve("POST")

            def do_GET(self) -> None:
                self._serve("GET")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, reply = fake._answer(method, self.path, headers,
                                             self.rfile.read(length))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
