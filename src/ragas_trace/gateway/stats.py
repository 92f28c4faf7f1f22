"""The gateway's counters: what was received, rejected, refused, forwarded and
dropped (and why). Read by the health endpoint, the shutdown log line and, as
OTel metrics, by Prometheus."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from opentelemetry.metrics import CallbackOptions, Meter, Observation


class GatewayStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.spans_received = 0
        self.spans_rejected = 0
        self.spans_repaired = 0
        self.spans_forwarded = 0
        self.requests_refused: Counter[str] = Counter()
        self.spans_dropped: Counter[str] = Counter()
        self.export_retries = 0
        self.duplicate_roots = 0
        self._gauges: dict[str, Callable[[], int]] = {}

    def received(self, accepted: int, rejected: int, repaired: int = 0) -> None:
        with self._lock:
            self.requests += 1
            self.spans_received += accepted
            self.spans_rejected += rejected
            self.spans_repaired += repaired

    def refused(self, reason: str) -> None:
        """A whole request turned away (bad input, auth, busy)."""
        with self._lock:
            self.requests_refused[reason] += 1

    def forwarded(self, n: int) -> None:
        with self._lock:
            self.spans_forwarded += n

    def dropped(self, reason: str, n: int = 1) -> None:
        with self._lock:
            self.spans_dropped[reason] += n

    def duplicate_root(self) -> None:
        """A copy of a RAG root already scored or held: forwarded, not scored."""
        with self._lock:
            self.duplicate_roots += 1

    def retried(self) -> None:
        with self._lock:
            self.export_retries += 1

    def add_gauge(self, name: str, read: Callable[[], int]) -> None:
        """A value read on demand (queue lengths), shown next to the counters."""
        self._gauges[name] = read

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            snap: dict[str, Any] = {
                "requests": self.requests,
                "spans_received": self.spans_received,
                "spans_rejected": self.spans_rejected,
                "spans_repaired": self.spans_repaired,
                "spans_forwarded": self.spans_forwarded,
                "requests_refused": dict(self.requests_refused),
                "spans_dropped": dict(self.spans_dropped),
                "export_retries": self.export_retries,
                "duplicate_roots": self.duplicate_roots,
            }
        snap.update({name: read() for name, read in self._gauges.items()})
        return snap

    def register_metrics(self, meter: Meter) -> None:
        """Expose the counters as OTel observable instruments (``ragas_gateway_*``)."""
        def counter(read: Callable[[], Iterable[tuple[int, dict[str, str]]]]
                    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
            def observe(_: CallbackOptions) -> Iterable[Observation]:
                with self._lock:
                    return [Observation(v, labels) for v, labels in read()]
            return observe

        meter.create_observable_counter(
            "ragas_gateway_spans_received", [counter(lambda: [(self.spans_received, {})])],
            description="Spans accepted by the OTLP receivers")
        meter.create_observable_counter(
            "ragas_gateway_spans_rejected", [counter(lambda: [(self.spans_rejected, {})])],
            description="Spans rejected one by one (reported as OTLP partial success)")
        meter.create_observable_counter(
            "ragas_gateway_spans_repaired", [counter(lambda: [(self.spans_repaired, {})])],
            description="Spans accepted with invalid UTF-8 replaced by U+FFFD")
        meter.create_observable_counter(
            "ragas_gateway_spans_forwarded", [counter(lambda: [(self.spans_forwarded, {})])],
            description="Spans exported downstream")
        meter.create_observable_counter(
            "ragas_gateway_duplicate_roots",
            [counter(lambda: [(self.duplicate_roots, {})])],
            description="Copies of a RAG root already held or scored: forwarded unscored")
        meter.create_observable_counter(
            "ragas_gateway_spans_dropped",
            [counter(lambda: [(n, {"reason": r}) for r, n in self.spans_dropped.items()])],
            description="Spans lost after acceptance, by reason")
        meter.create_observable_counter(
            "ragas_gateway_requests_refused",
            [counter(lambda: [(n, {"reason": r}) for r, n in self.requests_refused.items()])],
            description="Requests turned away whole, by reason")
        for name, read in self._gauges.items():
            meter.create_observable_gauge(
                f"ragas_gateway_{name}",
                [lambda _, read=read: [Observation(read())]])  # type: ignore[misc]
