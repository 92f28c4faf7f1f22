"""The ``metrics_port`` endpoint's reader: the OpenTelemetry Prometheus exporter,
plus the exemplars it drops. The SDK records an exemplar per histogram bucket (and
for counters) from the span in the context of ``record()``/``add()``; the exporter
(0.66b2) writes buckets without them. This reader keeps, per series and bucket, the
last exemplar the SDK collected, and puts it on the matching sample at each scrape
(as prometheus_client's own histograms do: the last one a bucket saw, until a newer
one replaces it, so a scrape by hand steals none from Prometheus). prometheus_client
writes them only in the OpenMetrics format (``Accept: application/openmetrics-text``):
``ragas_faithfulness_bucket{...,le="0.4"} 3.0 # {trace_id="...",span_id="..."} 0.25 ...``.

Bounded: one exemplar per bucket of each series, and the series are bounded by the
label caps (``exporters.label_cap``)."""

from __future__ import annotations

import logging
import re
import threading
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from typing import Any

from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics.export import HistogramDataPoint, MetricsData, NumberDataPoint
from prometheus_client import CollectorRegistry
from prometheus_client.samples import Exemplar

logger = logging.getLogger("ragas_trace")
_Key = tuple[str, frozenset[tuple[str, str]]]
_SCOPE_PREFIX = "otel_scope_"


def _sanitize(name: str) -> str:
    """The exporter's name for a metric or an attribute (ours are ASCII words)."""
    return re.sub(r"[^a-zA-Z0-9_:]", "_", name)


class ExemplarPrometheusReader(PrometheusMetricReader):
    """A ``PrometheusMetricReader`` whose scrapes carry the SDK's exemplars. The
    exporter's collector is a private part of it: with an exporter version that has
    none, the reader serves the exporter's scrapes as they are, and says so once."""

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__(registry=registry)
        self.exemplars = LastExemplars()
        inner = getattr(self, "_collector", None)
        self._served: _WithExemplars | None = None
        if inner is None or not hasattr(inner, "collect"):
            logger.info("ragas-trace: this opentelemetry-exporter-prometheus has no "
                        "collector to wrap: the metrics endpoint serves no exemplars")
            return
        # Serve the exporter's families through ours: same series, plus exemplars.
        registry.unregister(inner)
        self._served = _WithExemplars(inner, self.exemplars)
        registry.register(self._served)  # type: ignore[arg-type]
        self._exemplar_registry = registry

    def _receive_metrics(self, metrics_data: MetricsData, timeout_millis: float = 10_000,
                         **kwargs: Any) -> None:
        if metrics_data is not None:
            self.exemplars.update(metrics_data)
        super()._receive_metrics(metrics_data, timeout_millis, **kwargs)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        if self._served is None:
            super().shutdown(timeout_millis, **kwargs)
            return
        self._exemplar_registry.unregister(self._served)  # type: ignore[arg-type]


class LastExemplars:
    """(metric, labels) -> bucket (``le``, or ``""`` for a counter) -> the last exemplar."""

    def __init__(self) -> None:
        self._by_series: dict[_Key, dict[str, Exemplar]] = {}
        self._lock = threading.Lock()

    def update(self, metrics_data: MetricsData) -> None:
        for resource_metrics in metrics_data.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    name = _sanitize(metric.name)
                    for point in getattr(metric.data, "data_points", ()):
                        if point.exemplars:
                            self._keep(name, point)

    def _keep(self, name: str, point: HistogramDataPoint | NumberDataPoint) -> None:
        labels = frozenset((_sanitize(k), str(v))
                           for k, v in (point.attributes or {}).items())
        found: dict[str, Exemplar] = {}
        for exemplar in point.exemplars:
            if not exemplar.trace_id:
                continue
            bucket = _bucket(point.explicit_bounds, exemplar.value) \
                if isinstance(point, HistogramDataPoint) else ""
            found[bucket] = Exemplar(
                {"trace_id": f"{exemplar.trace_id:032x}", "span_id": f"{exemplar.span_id:016x}"},
                exemplar.value, exemplar.time_unix_nano / 1e9)
        if found:
            with self._lock:
                self._by_series.setdefault((name, labels), {}).update(found)

    def get(self, name: str, labels: dict[str, str]) -> Exemplar | None:
        """The exemplar of one sample: a ``_bucket`` (by its ``le``) or ``_total``."""
        for suffix, bucket in (("_bucket", labels.get("le")), ("_total", "")):
            if name.endswith(suffix) and bucket is not None:
                key = frozenset((k, v) for k, v in labels.items()
                                if k != "le" and not k.startswith(_SCOPE_PREFIX))
                with self._lock:
                    return self._by_series.get((name.removesuffix(suffix), key), {}).get(bucket)
        return None


def _bucket(bounds: Iterable[float] | None, value: float) -> str:
    """The ``le`` of the bucket ``value`` falls in, as the exporter writes it."""
    bounds = tuple(bounds or ())
    index = bisect_left(bounds, value)
    return f"{bounds[index]}" if index < len(bounds) else "+Inf"


class _WithExemplars:
    """A collector yielding ``inner``'s families with the exemplars put back."""

    def __init__(self, inner: Any, exemplars: LastExemplars) -> None:
        self._inner = inner
        self._exemplars = exemplars

    def collect(self) -> Iterator[Any]:
        for family in self._inner.collect():
            if family.type in ("histogram", "counter"):
                family.samples = [
                    sample._replace(exemplar=found)
                    if (found := self._exemplars.get(sample.name, sample.labels)) is not None
                    else sample
                    for sample in family.samples]
            yield family
