"""The ``app`` label of the scores' metrics: only from a name someone chose for it.

A root span's name is not one: LangChain's ``run_name`` (often per request), a
chain's class, or, at a gateway, whatever any sender put there would mint a label
value, and so a series per metric, per name (5,000 names, 5,000 series). So the
label is the root's ``ragas.app.name`` (a handler's ``app_name``), else its name
only where the operator listed it (the gateway's ``--app-names``), else the
default: the ``app_name`` setting in-process, ``unknown`` without one."""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc

UNKNOWN_APP = "unknown"


class AppLabel:
    """``app_label`` for ``build_pipeline``: a set lookup per scored root."""

    def __init__(self, allowed: Iterable[str] = (), default: str | None = None) -> None:
        self._allowed = frozenset(allowed)
        self._default = default or UNKNOWN_APP

    def __call__(self, span: ReadableSpan) -> str:
        name = (span.attributes or {}).get(sc.RAGAS_APP_NAME)
        if isinstance(name, str) and name:
            return name
        return span.name if span.name in self._allowed else self._default
