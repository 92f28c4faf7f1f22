"""Phoenix annotations, ``PHOENIX_API_KEY`` as a bearer token:

- span annotations (``POST /v1/span_annotations``), read by Phoenix's evaluation
  columns, charts and filters;
- trace annotations (``POST /v1/trace_annotations``), read by its trace views
  ("Trace annotation scores");
- document annotations (``POST /v1/document_annotations``), one per retrieved
  passage by position on its RETRIEVER span, read by its retrieval metrics;
- before the first of them, one annotation config per metric
  (``/v1/annotation_configs``: continuous, 0 to 1, higher is better), looked up
  by name first and never changed when it exists.

Every request is synchronous (``sync=true``): Phoenix answers once the rows are in
its database, or 404 naming the spans (traces) it does not have yet. In its
default asynchronous mode it answers 200 at once and keeps the annotation in
memory, retrying until its span arrives: a restart loses it, unseen. Those it does
not know yet are retried by the queue; the rest of the batch is stored at once.
The ``identifier`` makes a repeat an update, and keeps ours apart from a person's
annotation of the same name (Phoenix takes none on document annotations: a
passage has one of each name)."""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_trace.exporters.annotations.http import request_json
from ragas_trace.exporters.annotations.queue import ItemFailure, SendError
from ragas_trace.exporters.annotations.scores import DOCUMENT, SPAN, TRACE, ScoreAnnotation
from ragas_trace.results import Metric

logger = logging.getLogger("ragas_trace")

DEFAULT_ENDPOINT = "http://localhost:6006"
ANNOTATIONS_PATH = "/v1/span_annotations"
PATHS = {SPAN: ANNOTATIONS_PATH, TRACE: "/v1/trace_annotations",
         DOCUMENT: "/v1/document_annotations"}
CONFIGS_PATH = "/v1/annotation_configs"
IDENTIFIER = "ragas-trace"
_ID_FIELD = {SPAN: "span_id", TRACE: "trace_id", DOCUMENT: "span_id"}
_MISSING = re.compile(r"(?:Spans|Traces) with IDs ([0-9a-fA-F, ]+) do not exist")
_DESCRIPTIONS = {
    Metric.FAITHFULNESS: "share of the answer's statements the retrieved context supports",
    Metric.ANSWER_RELEVANCE: "how directly the answer addresses the question",
    Metric.CONTEXT_RELEVANCE: "share of the retrieved context needed to answer",
}


def base_url(endpoint: str) -> str:
    """Phoenix's base URL from ``PHOENIX_COLLECTOR_ENDPOINT``, which users also set to
    the OTLP traces URL (``.../v1/traces``)."""
    url = endpoint.strip().rstrip("/")
    return url.removesuffix("/v1/traces")


def annotation_body(annotation: ScoreAnnotation) -> dict[str, Any]:
    body: dict[str, Any] = {
        _ID_FIELD[annotation.target]: (annotation.trace_id if annotation.target == TRACE
                                       else annotation.span_id),
        "name": annotation.name,
        "annotator_kind": annotation.annotator_kind,
        "result": {"score": annotation.score, "label": annotation.label,
                   "explanation": annotation.explanation},
        "metadata": {"judge": annotation.judge, "threshold": annotation.threshold,
                     "trace_id": annotation.trace_id},
    }
    if annotation.target == DOCUMENT:
        body["document_position"] = annotation.document_position
    else:
        body["identifier"] = IDENTIFIER
    return body


def config_body(metric: Metric, threshold: float) -> dict[str, Any]:
    """A continuous 0-1 config, higher is better; Phoenix's continuous configs take
    no threshold, so the description states ours."""
    return {"name": str(metric), "type": "CONTINUOUS",
            "description": f"ragas-trace: {_DESCRIPTIONS[metric]}; pass at >= {threshold:g}",
            "optimization_direction": "MAXIMIZE", "lower_bound": 0.0, "upper_bound": 1.0}


class PhoenixAnnotations:
    name = "phoenix"

    def __init__(self, endpoint: str, api_key: str | None = None,
                 thresholds: Mapping[str, float] | None = None) -> None:
        self.base = base_url(endpoint)
        self.url = self.base + ANNOTATIONS_PATH
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._thresholds = dict(thresholds or {})
        self._configured: set[Metric] = set()

    def keep(self, annotation: ScoreAnnotation) -> bool:
        return True

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float
             ) -> list[ItemFailure]:
        self.ensure_configs(timeout_s)
        failures: list[ItemFailure] = []
        for target in (SPAN, TRACE, DOCUMENT):
            group = [a for a in batch if a.target == target]
            if not group:
                continue
            try:
                failures += self._send_group(target, group, timeout_s)
            except SendError as exc:  # this kind only: the others may be stored
                failures += [ItemFailure(a, str(exc), exc.retry) for a in group]
        return failures

    def ensure_configs(self, timeout_s: float) -> None:
        """Create the metrics' annotation configs that do not exist yet (a lookup by
        name first, so an existing one, perhaps edited by a person, is kept). A
        network or server error is retried with the next batch; a refusal (say, a key
        without the right to create configs) is logged once and not retried.
        Annotations never wait for configs."""
        for metric in Metric:
            if metric in self._configured:
                continue
            path = f"{CONFIGS_PATH}/{urllib.parse.quote(str(metric))}"
            try:
                try:
                    request_json("GET", self.base + path, None, self._headers, timeout_s)
                except SendError as exc:
                    if exc.status != 404:
                        raise
                    request_json("POST", self.base + CONFIGS_PATH,
                                 config_body(metric, self._thresholds.get(str(metric), 0.5)),
                                 self._headers, timeout_s)
            except SendError as exc:
                if exc.retry or exc.status is None:
                    return  # Phoenix unreachable or busy: next batch
                if exc.status != 409:  # 409: made meanwhile, by name
                    logger.warning("ragas-trace: Phoenix annotation config %s not created: "
                                   "%s", metric, exc)
            self._configured.add(metric)

    def _send_group(self, target: str, group: list[ScoreAnnotation], timeout_s: float
                    ) -> list[ItemFailure]:
        url = self.base + PATHS[target] + "?sync=true"

        def key(annotation: ScoreAnnotation) -> str:
            return annotation.trace_id if target == TRACE else annotation.span_id

        try:
            request_json("POST", url, {"data": [annotation_body(a) for a in group]},
                         self._headers, timeout_s)
            return []
        except SendError as exc:
            missing = _missing_ids(exc)
            waiting = [a for a in group if key(a) in missing]
            if not waiting:  # a 404 that names none of ours: all of it may be early
                raise SendError(str(exc), retry=exc.retry or exc.status == 404,
                                status=exc.status, detail=exc.detail) from None
        failures = [ItemFailure(a, f"Phoenix has no {target} {key(a)} yet", True)
                    for a in waiting]
        rest = [a for a in group if key(a) not in missing]
        if rest:
            try:
                request_json("POST", url, {"data": [annotation_body(a) for a in rest]},
                             self._headers, timeout_s)
            except SendError as exc:
                failures += [ItemFailure(a, str(exc), exc.retry or exc.status == 404)
                             for a in rest]
        return failures


def _missing_ids(error: SendError) -> set[str]:
    """The ids a 404 names (Phoenix refuses the whole batch when one is missing)."""
    found = _MISSING.search(error.detail) if error.status == 404 else None
    if found is None:
        return set()
    return {part.strip().lower() for part in found.group(1).split(",") if part.strip()}
