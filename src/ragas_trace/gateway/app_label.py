"""The ``app`` label of the scores' metrics for spans received from other processes.

In-process the label falls back to the root span's name, which the app's own code
chooses. A gateway's senders are anyone who can reach it: taking their span names
would let them mint a label value per span name (5,000 names, 5,000 series per
metric). So a received root's label is its ``ragas.app.name``, else its name if the
operator listed it (``--app-names``), else ``unknown``."""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc

UNKNOWN_APP = "unknown"


class AppLabel:
    """``app_label`` for ``build_pipeline``: a set lookup per scored root."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        self._allowed = frozenset(allowed)

    def __call__(self, span: ReadableSpan) -> str:
        name = (span.attributes or {}).get(sc.RAGAS_APP_NAME)
        if isinstance(name, str) and name:
            return name
        return span.name if span.name in self._allowed else UNKNOWN_APP
