"""Series created at zero before their first value. Prometheus's ``increase()``
does not count a series' first sample: a score series that appears with its first
scores loses them to every rate and recording rule (a first burst after a deploy,
238 scored, read as 0). So the scorer creates each series as soon as its labels are
known, and the first scrape sees it at 0.

A counter is created by adding 0 (the API allows it). A histogram has no such call:
recording any value counts it, so for the OpenTelemetry SDK's histograms the
aggregation is made through the SDK's own storage, as its first ``record()`` would
(checked against the pinned SDK by tests/exporters/test_series_at_zero.py); the
multiprocess instruments (``exporters.multiprocess_metrics``) have
``create_at_zero``. Anything else (a no-op provider, another SDK) is left alone:
its series appear with their first value, as before."""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry.metrics import NoOpHistogram
from opentelemetry.util.types import Attributes

logger = logging.getLogger("ragas_trace")
_warned = False


def create_at_zero(instrument: Any, attributes: Attributes) -> bool:
    """Make ``instrument``'s series for ``attributes`` exist at 0; whether it could."""
    own = getattr(instrument, "create_at_zero", None)
    if own is not None:
        own(attributes)
        return True
    if hasattr(instrument, "add"):
        instrument.add(0, attributes)
        return True
    if isinstance(instrument, NoOpHistogram):
        return False  # no metrics: nothing to create
    return _sdk_histogram_at_zero(instrument, dict(attributes or {}))


def _sdk_histogram_at_zero(instrument: Any, attributes: dict[str, Any]) -> bool:
    try:
        from opentelemetry.sdk.metrics._internal._view_instrument_match import (
            _hash_attributes,
        )

        storages = instrument._measurement_consumer._reader_storages.values()
        for storage in storages:
            for match in storage._get_or_init_view_instrument_match(instrument):
                keys = match._view._attribute_keys
                attrs = (attributes if keys is None
                         else {k: v for k, v in attributes.items() if k in keys})
                with match._lock:
                    match._get_or_create_aggregation(_hash_attributes(attrs), attrs)
    except (AttributeError, ImportError, TypeError) as exc:
        _say_once(instrument, exc)
        return False
    return True


def _say_once(instrument: Any, exc: Exception) -> None:
    global _warned
    if not _warned:
        _warned = True
        logger.info("ragas-trace: cannot create %s's series at zero with this "
                    "OpenTelemetry SDK (%s): a series' first scores are not counted by "
                    "increase() until it exists", type(instrument).__name__, exc)
