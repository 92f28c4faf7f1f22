"""Ten times more requests than the judge can score: bounded buffers, every span
exported exactly once, every drop counted."""

from __future__ import annotations

import threading
from collections import Counter

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragas_trace import semconv as sc
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.testing.rag_spans import evaluation_status, rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

CONCURRENCY = 2
QUEUE = 4
MAX_HELD = 8
REQUESTS = 200


def counter_total(reader: InMemoryMetricReader, name: str) -> dict[str, int]:
    out: Counter[str] = Counter()
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == name:
                    for point in metric.data.data_points:
                        key = str(point.attributes.get("reason", point.attributes.get("status")))
                        out[key] += int(point.value)
    return dict(out)


def test_overload_is_bounded_and_loses_nothing(make_rig):
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    # The judge is held while the requests arrive: it can take at most
    # CONCURRENCY + QUEUE of them, far fewer than a tenth.
    gate = threading.Event()
    judge = ScriptedJudge(delay_s=0.01, gate=gate)
    rig = make_rig(judge, concurrency=CONCURRENCY, queue_size=QUEUE, max_held_spans=MAX_HELD,
                   hold_timeout_s=30, metrics=metrics)
    peak_held = peak_pending = 0
    for _ in range(REQUESTS):
        rag_request(rig.tracer)
        peak_held = max(peak_held, rig.processor.held_count)
        peak_pending = max(peak_pending, rig.processor.scorer.pending)
    gate.set()
    assert rig.processor.force_flush(30_000)
    assert peak_held <= MAX_HELD
    assert peak_pending <= QUEUE + CONCURRENCY
    assert rig.processor.held_count == 0
    assert len(rig.processor._traces) == 0

    roots = rig.named("rag")
    assert len(roots) == REQUESTS  # every root exactly once
    assert len({r.context.span_id for r in roots}) == REQUESTS
    statuses = Counter(evaluation_status(r) for r in roots)
    assert set(statuses) == {"scored", "dropped"}
    assert statuses["scored"] == judge.calls
    assert QUEUE <= statuses["scored"] <= QUEUE + CONCURRENCY
    reasons = Counter(r.attributes[sc.RAGAS_EVALUATION_REASON] for r in roots
                      if evaluation_status(r) == "dropped")
    assert counter_total(reader, "ragas.scorer.dropped") == dict(reasons)
    assert counter_total(reader, "ragas.evaluations") == dict(statuses)
    assert len(rig.named("retriever")) == len(rig.named("llm")) == REQUESTS
