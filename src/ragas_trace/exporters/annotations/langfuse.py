"""Langfuse scores: ``POST {LANGFUSE_HOST}/api/public/scores``, one score per request,
basic auth with the project's public and secret keys.

Langfuse files OTLP spans under their own ids (trace id: 32 hex digits, observation
id: 16), so a score names the evaluated span by those. The score ``id`` is derived
from span and metric: Langfuse upserts on it, so a retried batch never doubles a
score. Only scored metrics are sent: a numeric score has no value for "not scored".
Written against Langfuse's published API reference; no Langfuse server runs in the
tests (a loopback fake checks path, auth and body)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from ragas_trace.exporters.annotations.http import post_json
from ragas_trace.exporters.annotations.scores import ScoreAnnotation

DEFAULT_HOST = "https://cloud.langfuse.com"
SCORES_PATH = "/api/public/scores"


def score_body(annotation: ScoreAnnotation) -> dict[str, Any]:
    return {
        "id": f"ragas-{annotation.trace_id}-{annotation.span_id}-{annotation.name}",
        "traceId": annotation.trace_id,
        "observationId": annotation.span_id,
        "name": annotation.name,
        "value": annotation.score,
        "dataType": "NUMERIC",
        "comment": annotation.explanation,
        "metadata": {"label": annotation.label, "judge": annotation.judge,
                     "threshold": annotation.threshold,
                     "annotator_kind": annotation.annotator_kind},
    }


class LangfuseScores:
    name = "langfuse"

    def __init__(self, host: str, public_key: str, secret_key: str) -> None:
        self.url = host.rstrip("/") + SCORES_PATH
        token = base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
        self._headers = {"Authorization": f"Basic {token}"}

    def keep(self, annotation: ScoreAnnotation) -> bool:
        return annotation.score is not None

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float) -> None:
        for annotation in batch:
            post_json(self.url, score_body(annotation), self._headers, timeout_s)
