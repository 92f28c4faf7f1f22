"""The scorer's metrics for pre-fork servers (gunicorn, ``uvicorn --workers``):
prometheus_client's multiprocess mode, the mechanism operators of such servers
already run. Each process writes its values to memory-mapped files of its own in
``PROMETHEUS_MULTIPROC_DIR`` as it records them (no flush, so a killed worker
loses nothing it recorded); the one process that holds ``metrics_port`` serves
the merge of every file: counters and histograms summed over processes, living
or dead, and the two gauges summed over the living.

It implements the part of the OpenTelemetry metrics API that ``ScorerMetrics``
uses, and names the series exactly as the OpenTelemetry Prometheus exporter does
(``ragas.judge.duration`` in ``s`` -> ``ragas_judge_duration_seconds``; a counter
gets ``_total``), so the rules and the dashboard read both alike. The exporter's
``otel_scope_*`` labels and ``target_info`` are left out: a merge over processes
has no single SDK resource."""

from __future__ import annotations

import glob
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.metrics import (
    CallbackOptions,
    CallbackT,
    Counter,
    Histogram,
    Meter,
    MeterProvider,
    NoOpCounter,
    NoOpHistogram,
    NoOpMeter,
    NoOpObservableCounter,
    NoOpObservableGauge,
    ObservableCounter,
    ObservableGauge,
)
from opentelemetry.util.types import Attributes

from ragas_trace import _thread_signals
from ragas_trace._internal_errors import record_internal_error
from ragas_trace._processes import alive
from ragas_trace.exporters.lost_requests import count_lost_of_dead_processes

logger = logging.getLogger("ragas_trace")
MULTIPROC_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Only the gauges of living processes count: a dead worker held nothing.
GAUGE_MODE: Final = "livesum"
GAUGE_INTERVAL_S = 1.0
_UNITS = {"s": "seconds"}  # the one unit the scorer's instruments use


def multiproc_dir() -> str | None:
    """``PROMETHEUS_MULTIPROC_DIR`` when set (to a directory or not)."""
    return os.environ.get(MULTIPROC_DIR_ENV) or None


def prometheus_name(name: str, unit: str = "") -> str:
    """What the OpenTelemetry Prometheus exporter calls the instrument (without a
    counter's ``_total``, which prometheus_client adds)."""
    base = re.sub(r"[^a-zA-Z0-9_:]", "_", name)
    suffix = _UNITS.get(unit, "")
    return f"{base}_{suffix}" if suffix and not base.endswith(suffix) else base


class _Family:
    """One prometheus_client metric per set of attribute keys, made on first use
    (the OpenTelemetry API names attributes at each call, prometheus_client at
    creation)."""

    def __init__(self, make: Callable[[tuple[str, ...]], Any]) -> None:
        self._make = make
        self._by_keys: dict[tuple[str, ...], Any] = {}
        self._lock = threading.Lock()

    def child(self, attributes: Attributes) -> Any:
        attrs = dict(attributes or {})
        keys = tuple(sorted(attrs))
        metric = self._by_keys.get(keys)
        if metric is None:
            with self._lock:
                metric = self._by_keys.get(keys)
                if metric is None:
                    metric = self._by_keys[keys] = self._make(keys)
        return metric.labels(*(str(attrs[k]) for k in keys)) if keys else metric


class _Counter(NoOpCounter):
    def __init__(self, meter: MultiprocessMeter, family: _Family, name: str) -> None:
        super().__init__(name)
        self._meter = meter
        self._family = family

    def add(self, amount: int | float, attributes: Attributes = None,
            context: Context | None = None) -> None:
        self._family.child(attributes).inc(amount)
        self._meter.recorded()

    def create_at_zero(self, attributes: Attributes) -> None:
        self._family.child(attributes)


class _Histogram(NoOpHistogram):
    def __init__(self, meter: MultiprocessMeter, family: _Family, name: str) -> None:
        super().__init__(name)
        self._meter = meter
        self._family = family

    def record(self, amount: int | float, attributes: Attributes = None,
               context: Context | None = None) -> None:
        self._family.child(attributes).observe(amount)
        self._meter.recorded()

    def create_at_zero(self, attributes: Attributes) -> None:
        self._family.child(attributes)


class _ObservedCounter:
    """An observable counter as a prometheus_client counter: each refresh adds what
    the callbacks' totals grew by since the last, so a dead worker's counts stay."""

    def __init__(self, family: _Family, callbacks: Sequence[CallbackT]) -> None:
        self._family = family
        self._callbacks = callbacks
        self._last: dict[tuple[tuple[str, str], ...], float] = {}

    def refresh(self) -> None:
        for callback in self._callbacks:
            observations: Iterable[Any] = callback(CallbackOptions())  # type: ignore[operator]
            for observation in observations:
                attrs = dict(observation.attributes or {})
                key = tuple(sorted((k, str(v)) for k, v in attrs.items()))
                grown = observation.value - self._last.get(key, 0.0)
                self._last[key] = observation.value
                if grown > 0:  # a reset (tests only) is not a negative count
                    self._family.child(attrs).inc(grown)


class MultiprocessMeter(NoOpMeter):
    """Counters, histograms, observable gauges and observable counters over
    prometheus_client's multiprocess values; other instruments are no-ops (the
    scorer uses none). A process cannot call another's callbacks at scrape time, so
    each process writes its observed values every ``GAUGE_INTERVAL_S`` from a daemon
    thread, started with its first record (again in a forked child, which has no
    threads): a worker that never recorded anything holds nothing."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._gauges: list[tuple[Any, Sequence[CallbackT]]] = []
        self._observed_counters: list[_ObservedCounter] = []
        self._refresher_pid: int | None = None
        self._lock = threading.Lock()

    def create_counter(self, name: str, unit: str = "", description: str = "") -> Counter:
        from prometheus_client import Counter as PromCounter

        metric = prometheus_name(name, unit)
        family = _Family(lambda keys: PromCounter(metric, description or name, keys,
                                                  registry=None))
        return _Counter(self, family, name)

    def create_histogram(self, name: str, unit: str = "", description: str = "", *,
                         explicit_bucket_boundaries_advisory: Sequence[float] | None = None,
                         ) -> Histogram:
        from prometheus_client import Histogram as PromHistogram

        metric = prometheus_name(name, unit)
        buckets = tuple(explicit_bucket_boundaries_advisory or PromHistogram.DEFAULT_BUCKETS)
        family = _Family(lambda keys: PromHistogram(metric, description or name, keys,
                                                    registry=None, buckets=buckets))
        return _Histogram(self, family, name)

    def create_observable_gauge(self, name: str, callbacks: Sequence[CallbackT] | None = None,
                                unit: str = "", description: str = "") -> ObservableGauge:
        from prometheus_client import Gauge

        gauge = Gauge(prometheus_name(name, unit), description or name, registry=None,
                      multiprocess_mode=GAUGE_MODE)
        self._gauges.append((gauge, tuple(callbacks or ())))
        return NoOpObservableGauge(name, callbacks, unit, description)

    def create_observable_counter(self, name: str,
                                  callbacks: Sequence[CallbackT] | None = None,
                                  unit: str = "", description: str = "") -> ObservableCounter:
        from prometheus_client import Counter as PromCounter

        metric = prometheus_name(name, unit)
        family = _Family(lambda keys: PromCounter(metric, description or name, keys,
                                                  registry=None))
        self._observed_counters.append(_ObservedCounter(family, tuple(callbacks or ())))
        return NoOpObservableCounter(name, callbacks, unit, description)

    def recorded(self) -> None:
        """Called on every record (some on the app's thread, so no more than a pid
        check): starts the refresher if this process has none yet."""
        pid = os.getpid()
        if self._refresher_pid != pid and (self._gauges or self._observed_counters):
            with self._lock:
                if self._refresher_pid != pid:
                    self._refresher_pid = pid
                    _thread_signals.start(threading.Thread(
                        target=self._refresh_forever, name="ragas-trace-gauges", daemon=True))

    def _refresh_forever(self) -> None:
        pid = os.getpid()
        while self._refresher_pid == pid:
            try:
                self.refresh_gauges()
            except Exception as exc:  # a gauge is not worth a dead thread
                record_internal_error("multiprocess_metrics.gauges", exc)
            time.sleep(GAUGE_INTERVAL_S)

    def refresh_gauges(self) -> None:
        for gauge, callbacks in self._gauges:
            for callback in callbacks:
                observations: Iterable[Any] = callback(CallbackOptions())  # type: ignore[operator]
                for observation in observations:
                    gauge.set(observation.value)
        for counter in self._observed_counters:
            counter.refresh()


class MultiprocessMeterProvider(MeterProvider):
    """One meter whatever the name: only the scorer's metrics go through it."""

    def __init__(self) -> None:
        self._meter = MultiprocessMeter("ragas_trace")
        _say_no_exemplars()

    def get_meter(self, name: str, version: str | None = None, schema_url: str | None = None,
                  attributes: Attributes | None = None) -> Meter:
        return self._meter


_said_no_exemplars = False


def _say_no_exemplars() -> None:
    """Once a process: prometheus_client's multiprocess mode cannot carry exemplars."""
    global _said_no_exemplars
    if not _said_no_exemplars:
        _said_no_exemplars = True
        logger.info("ragas-trace: metrics in PROMETHEUS_MULTIPROC_DIR carry no exemplars "
                    "(prometheus_client's multiprocess mode cannot hold them): the score "
                    "histograms link to no trace on this endpoint. Metrics sent over OTLP "
                    "(no metrics_port, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) carry them")


def multiprocess_values_ready() -> bool:
    """Whether prometheus_client writes its values to files: it decides once, when
    first imported, from ``PROMETHEUS_MULTIPROC_DIR``."""
    from prometheus_client import values

    return bool(getattr(values.ValueClass, "_multiprocess", False))


def forget_dead_processes(path: str) -> None:
    """Drop the gauge files of processes that no longer run, as the
    ``child_exit`` hook's ``mark_process_dead`` would (counters and histograms
    stay: their counts happened). Run before each scrape, so a worker killed
    without the hook leaves no stale gauge."""
    from prometheus_client import multiprocess

    for file in glob.glob(os.path.join(path, f"gauge_{GAUGE_MODE}_*.db")):
        pid = file.rsplit("_", 1)[-1].removesuffix(".db")
        if pid.isdigit() and not alive(int(pid)):
            multiprocess.mark_process_dead(int(pid), path)  # type: ignore[no-untyped-call]


class MultiprocessCollector:
    """prometheus_client's ``MultiProcessCollector`` after ``forget_dead_processes``
    and ``count_lost_of_dead_processes``."""

    def __init__(self, path: str) -> None:
        from prometheus_client.multiprocess import MultiProcessCollector

        self._path = path
        self._merged = MultiProcessCollector(None, path)  # type: ignore[no-untyped-call]
        self._balanced: dict[str, tuple[int, int]] = {}

    def collect(self) -> Iterable[Any]:
        try:
            forget_dead_processes(self._path)
        except OSError:
            pass  # a file another scrape removed first
        # A worker killed since the last scrape: its unsettled requests count as lost
        # in this scrape already, not only when a replacement starts.
        count_lost_of_dead_processes(self._path, seen=self._balanced)
        return self._merged.collect()  # type: ignore[no-untyped-call,no-any-return]
