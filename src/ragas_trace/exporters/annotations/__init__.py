"""Scores written where Phoenix and Langfuse users look: Phoenix span, trace and
document annotations and Langfuse scores, sent in batches from bounded queues on
the scorer's side once the evaluated span was exported, counted by what the
backend confirms."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from ragas_trace.exporters.annotations.langfuse import DEFAULT_HOST, LangfuseScores
from ragas_trace.exporters.annotations.phoenix import DEFAULT_ENDPOINT, PhoenixAnnotations
from ragas_trace.exporters.annotations.queue import AnnotationBackend
from ragas_trace.exporters.annotations.sinks import NAMES, AnnotationSinks, annotation_names

logger = logging.getLogger("ragas_trace")

__all__ = ["DEFAULT_ENDPOINT", "DEFAULT_HOST", "NAMES", "AnnotationSinks", "annotation_names",
           "backends"]


def backends(names: tuple[str, ...], *, phoenix_endpoint: str, phoenix_api_key: str | None,
             langfuse_host: str, langfuse_public_key: str | None,
             langfuse_secret_key: str | None,
             thresholds: Mapping[str, float] | None = None) -> list[AnnotationBackend]:
    """The backends ``names`` turns on. Langfuse without both keys is skipped with a
    warning (a deployment missing a secret keeps running, without Langfuse scores)."""
    out: list[AnnotationBackend] = []
    if "phoenix" in names:
        out.append(PhoenixAnnotations(phoenix_endpoint, phoenix_api_key, thresholds))
    if "langfuse" in names:
        if langfuse_public_key and langfuse_secret_key:
            out.append(LangfuseScores(langfuse_host, langfuse_public_key, langfuse_secret_key))
        else:
            logger.warning("ragas-trace: annotations=langfuse needs LANGFUSE_PUBLIC_KEY and "
                           "LANGFUSE_SECRET_KEY; Langfuse scores are off")
    return out
