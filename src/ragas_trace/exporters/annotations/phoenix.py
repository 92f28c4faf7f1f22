"""Phoenix span annotations: ``POST {PHOENIX_COLLECTOR_ENDPOINT}/v1/span_annotations``,
a batch per request, ``PHOENIX_API_KEY`` as a bearer token.

Phoenix's evaluation columns, charts and annotation filters read only these (not
span attributes). The request is asynchronous on Phoenix's side (its default,
``sync=false``): an annotation that arrives before its span (ours leave as soon as
the judge answers, the span through a batching exporter) is kept and retried by
Phoenix until the span is there, instead of being refused. The annotation's
``identifier`` makes a repeat an update, and keeps ours apart from a person's
annotation of the same name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragas_trace.exporters.annotations.http import post_json
from ragas_trace.exporters.annotations.scores import ScoreAnnotation

DEFAULT_ENDPOINT = "http://localhost:6006"
ANNOTATIONS_PATH = "/v1/span_annotations"
IDENTIFIER = "ragas-trace"


def base_url(endpoint: str) -> str:
    """Phoenix's base URL from ``PHOENIX_COLLECTOR_ENDPOINT``, which users also set to
    the OTLP traces URL (``.../v1/traces``)."""
    url = endpoint.strip().rstrip("/")
    return url.removesuffix("/v1/traces")


def annotation_body(annotation: ScoreAnnotation) -> dict[str, Any]:
    return {
        "span_id": annotation.span_id,
        "name": annotation.name,
        "annotator_kind": annotation.annotator_kind,
        "result": {"score": annotation.score, "label": annotation.label,
                   "explanation": annotation.explanation},
        "metadata": {"judge": annotation.judge, "threshold": annotation.threshold,
                     "trace_id": annotation.trace_id},
        "identifier": IDENTIFIER,
    }


class PhoenixAnnotations:
    name = "phoenix"

    def __init__(self, endpoint: str, api_key: str | None = None) -> None:
        self.url = base_url(endpoint) + ANNOTATIONS_PATH
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def keep(self, annotation: ScoreAnnotation) -> bool:
        return True

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float) -> None:
        post_json(self.url, {"data": [annotation_body(a) for a in batch]}, self._headers,
                  timeout_s)
