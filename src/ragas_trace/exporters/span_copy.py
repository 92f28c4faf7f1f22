"""Copies of finished spans with different attributes.

SDK spans are immutable once ended, so "adding scores to a span" means exporting
a ``ReadableSpan`` copy. The copy respects the span attribute limits
(``OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`` / ``..._VALUE_LENGTH_LIMIT``): when the added
attributes do not fit, the original's *last* attributes give way (for RAG spans,
the highest-ranked retrieved documents come first and are kept), and the dropped
count says so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits
from opentelemetry.trace import Status
from opentelemetry.util.types import AttributeValue

_default_limits: SpanLimits | None = None


def _limits() -> SpanLimits:
    global _default_limits
    if _default_limits is None:
        _default_limits = SpanLimits()
    return _default_limits


def copy_span(
    span: ReadableSpan,
    attributes: Mapping[str, AttributeValue],
    added: Mapping[str, AttributeValue] | None = None,
    limits: SpanLimits | None = None,
    events: Sequence[Event] | None = None,
    status: Status | None = None,
) -> ReadableSpan:
    """``span`` with ``attributes`` replacing its own, plus ``added`` (which win), and
    ``events`` / ``status`` replacing its own when given."""
    limits = limits or _limits()
    added = added or {}
    max_count = limits.max_span_attributes
    base = {k: v for k, v in attributes.items() if k not in added}
    dropped = span.dropped_attributes
    if max_count is not None and len(base) + len(added) > max_count:
        keep = max(0, max_count - len(added))
        dropped += len(base) - keep
        base = dict(list(base.items())[:keep])
    merged = {**base, **added}
    bounded = BoundedAttributes(
        maxlen=max_count,
        attributes=merged,
        immutable=True,
        max_value_len=limits.max_span_attribute_length,
    )
    bounded.dropped += dropped
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=bounded,
        events=span.events if events is None else events,
        links=span.links,
        kind=span.kind,
        status=span.status if status is None else status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
