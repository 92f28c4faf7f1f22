"""Langfuse scores: ``POST {LANGFUSE_HOST}/api/public/ingestion``, a batch of
``score-create`` events per request, basic auth built here from the project's
public and secret keys (``LANGFUSE_PUBLIC_KEY`` / ``LANGFUSE_SECRET_KEY``), plus the
headers Langfuse asks OTLP exporters to send (``otlp_headers``).

Langfuse files OTLP spans under their own ids (trace id: 32 hex digits, observation
id: 16), so a score names the evaluated span by those. The score ``id`` is derived
from trace, span and metric and the event's ``timestamp`` is the span's end, so a
re-sent score updates the one stored instead of adding a second. The ingestion API
answers 207 with ``successes`` and ``errors`` per event: each event is counted by
its own answer (5xx and 429 retried, other errors refused). Only scored metrics
are sent: a numeric score has no value for "not scored". Written against
Langfuse's published OpenAPI reference; no Langfuse server runs in the tests (a
loopback fake validates headers, body and the 207 reply)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ragas_trace.exporters.annotations.http import RETRY_STATUSES, request_json
from ragas_trace.exporters.annotations.queue import ItemFailure
from ragas_trace.exporters.annotations.scores import SPAN, ScoreAnnotation

DEFAULT_HOST = "https://cloud.langfuse.com"
INGESTION_PATH = "/api/public/ingestion"
OTLP_PATH = "/api/public/otel"
INGESTION_VERSION_HEADER = "x-langfuse-ingestion-version"
INGESTION_VERSION = "4"


def basic_auth(public_key: str, secret_key: str) -> str:
    """The ``Authorization`` value, on one line (``base64`` on a shell wraps at 76
    characters, and the OTel SDK then drops every header)."""
    token = base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
    return f"Basic {token}"


def otlp_headers(public_key: str | None, secret_key: str | None,
                 given: Mapping[str, str]) -> dict[str, str]:
    """Headers of an OTLP exporter to Langfuse: ``given`` (``OTEL_EXPORTER_OTLP_*
    HEADERS``) plus basic auth from the keys unless ``given`` has one, plus the
    ingestion version unless set."""
    headers = dict(given)
    names = {k.lower() for k in headers}
    if "authorization" not in names and public_key and secret_key:
        headers["Authorization"] = basic_auth(public_key, secret_key)
    if INGESTION_VERSION_HEADER not in names:
        headers[INGESTION_VERSION_HEADER] = INGESTION_VERSION
    return headers


def is_langfuse_otlp(endpoint: str) -> bool:
    return OTLP_PATH in endpoint


def score_id(annotation: ScoreAnnotation) -> str:
    return f"ragas-{annotation.trace_id}-{annotation.span_id}-{annotation.name}"


def _timestamp(ns: int) -> str:
    moment = datetime.fromtimestamp(ns / 1e9, UTC) if ns else datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def score_event(annotation: ScoreAnnotation) -> dict[str, Any]:
    return {
        # The envelope id only deduplicates one delivery; the body id is the score's.
        "id": str(uuid.uuid4()),
        "timestamp": _timestamp(annotation.timestamp_ns),
        "type": "score-create",
        "body": {
            "id": score_id(annotation),
            "traceId": annotation.trace_id,
            "observationId": annotation.span_id,
            "name": annotation.name,
            "value": annotation.score,
            "dataType": "NUMERIC",
            "comment": annotation.explanation,
            "metadata": {"label": annotation.label, "judge": annotation.judge,
                         "threshold": annotation.threshold,
                         "annotator_kind": annotation.annotator_kind},
        },
    }


class LangfuseScores:
    name = "langfuse"

    def __init__(self, host: str, public_key: str, secret_key: str) -> None:
        self.url = host.rstrip("/") + INGESTION_PATH
        self._headers = {"Authorization": basic_auth(public_key, secret_key)}

    def keep(self, annotation: ScoreAnnotation) -> bool:
        return annotation.target == SPAN and annotation.score is not None

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float
             ) -> list[ItemFailure]:
        events = [score_event(a) for a in batch]
        by_event = {e["id"]: a for e, a in zip(events, batch, strict=True)}
        _, reply = request_json("POST", self.url, {"batch": events}, self._headers, timeout_s)
        reply = reply if isinstance(reply, dict) else {}
        stored = {s.get("id") for s in reply.get("successes") or () if isinstance(s, dict)}
        failures: list[ItemFailure] = []
        errors = {e.get("id"): e for e in reply.get("errors") or () if isinstance(e, dict)}
        for event_id, annotation in by_event.items():
            if event_id in stored:
                continue
            error = errors.get(event_id)
            if error is None:  # neither stored nor refused: not confirmed
                failures.append(ItemFailure(annotation, "no answer for the event", True))
                continue
            status = error.get("status")
            failures.append(ItemFailure(
                annotation, f"HTTP {status}: {error.get('message') or error.get('error')}",
                isinstance(status, int) and status in RETRY_STATUSES))
        return failures
