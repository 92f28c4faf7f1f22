"""The processor's shutdown with a spool: what it cannot deliver by its deadline
(roots the judge has not scored, annotations not sent) is kept, and the next
processor with the same spool scores, exports and sends it; the counts balance."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragas_trace.exporters.annotations import AnnotationSinks
from ragas_trace.exporters.annotations.queue import ItemFailure, SendError
from ragas_trace.exporters.annotations.scores import ScoreAnnotation
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.spool import Spool
from ragas_trace.testing.rag_spans import evaluation_status, rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

THRESHOLDS = {"faithfulness": 0.5, "answer_relevance": 0.5, "context_relevance": 0.5}


class Counted:
    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.metrics = ScorerMetrics(MeterProvider(metric_readers=[self.reader]), "svc")

    def sums(self, name: str, label: str) -> dict[str, int]:
        out: Counter[str] = Counter()
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            out[str(point.attributes.get(label, ""))] += int(point.value)
        return dict(out)


class Backend:
    """An annotation backend that stores, or (``down``) answers 503 to everything."""

    name = "phoenix"

    def __init__(self, down: bool = False) -> None:
        self.down = down
        self.sent: list[ScoreAnnotation] = []
        self.lock = threading.Lock()

    def keep(self, annotation: ScoreAnnotation) -> bool:
        return True

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float) -> list[ItemFailure]:
        if self.down:
            raise SendError("503 Service Unavailable", retry=True, status=503)
        with self.lock:
            self.sent.extend(batch)
        return []


def _spool(path: Path, counted: Counted, **bounds: int) -> Spool:
    return Spool(str(path), max_bytes=bounds.get("max_bytes", 1 << 24),
                 max_entries=bounds.get("max_entries", 10_000),
                 on_event=counted.metrics.spool)


def test_roots_the_judge_did_not_score_by_the_deadline_are_scored_by_the_next_start(
        make_rig, tmp_path):
    first, second = Counted(), Counted()
    rig = make_rig(ScriptedJudge(mode="hang"), metrics=first.metrics,
                   spool=_spool(tmp_path, first))
    for _ in range(3):
        rag_request(rig.tracer)
    rig.processor.stop_scoring(0.2)  # the exit path: the judge's share ran out
    assert rig.processor.shutdown(1.0) is False
    assert rig.named("rag") == []  # not exported unscored: kept for the next start
    assert {s.name for s in rig.spans()} == {"retriever", "llm"}
    assert first.sums("ragas.requests", "service") == {"svc": 3}
    assert first.sums("ragas.spool.requests", "event") == {"written": 3}
    assert first.sums("ragas.evaluations", "status") == {}

    nxt = make_rig(ScriptedJudge(0.8), metrics=second.metrics,
                   spool=_spool(tmp_path, second))
    assert nxt.processor.replay(nxt.processor.spool.claim()) == 3
    assert nxt.processor.force_flush(5000)
    roots = nxt.named("rag")
    assert [evaluation_status(r) for r in roots] == ["scored"] * 3
    assert {s.name for s in nxt.spans()} - {"ragas.evaluation"} == {"rag"}  # once each
    assert second.sums("ragas.requests", "service") == {}  # counted where they began
    assert second.sums("ragas.spool.requests", "event") == {"claimed": 3}
    assert second.sums("ragas.evaluations", "status") == {"scored": 3}
    assert list(tmp_path.iterdir()) == []


def test_a_full_spool_takes_what_fits_and_the_rest_leave_dropped_and_counted(
        make_rig, tmp_path):
    counted = Counted()
    rig = make_rig(ScriptedJudge(mode="hang"), metrics=counted.metrics,
                   spool=_spool(tmp_path, counted, max_entries=1))
    for _ in range(3):
        rag_request(rig.tracer)
    rig.processor.stop_scoring(0.2)
    rig.processor.shutdown(1.0)
    assert [evaluation_status(r) for r in rig.named("rag")] == ["dropped"] * 2
    assert counted.sums("ragas.spool", "event") == {"written": 1, "full": 2}
    assert counted.sums("ragas.evaluations", "status") == {"dropped": 2}
    requests = counted.sums("ragas.requests", "service")["svc"]
    assert requests == 2 + counted.sums("ragas.spool.requests", "event")["written"]


def test_annotations_not_sent_by_the_deadline_are_sent_by_the_next_start(make_rig, tmp_path):
    first, second = Counted(), Counted()
    down, up = Backend(down=True), Backend()
    rig = make_rig(ScriptedJudge(0.9), metrics=first.metrics, spool=_spool(tmp_path, first),
                   thresholds=THRESHOLDS,
                   annotations=AnnotationSinks([down], first.metrics, ContentPolicy(),
                                               THRESHOLDS))
    for _ in range(2):
        rag_request(rig.tracer)
    assert rig.wait(lambda spans: sum(s.name == "rag" for s in spans) == 2)
    deadline = time.monotonic() + 5
    while not first.sums("ragas.annotations", "outcome").get("retried") \
            and time.monotonic() < deadline:
        time.sleep(0.01)  # the backend is failing them
    rig.processor.shutdown(1.5)
    assert first.sums("ragas.annotations", "outcome").get("lost", 0) == 0
    spooled = first.sums("ragas.spool", "event")["written"]
    assert spooled == 2 * 6  # per request: three span and three trace annotations

    nxt = make_rig(ScriptedJudge(), metrics=second.metrics, spool=_spool(tmp_path, second),
                   annotations=AnnotationSinks([up], second.metrics, ContentPolicy(),
                                               THRESHOLDS))
    assert nxt.processor.replay(nxt.processor.spool.claim()) == spooled
    assert nxt.processor.force_flush(5000)
    assert len(up.sent) == spooled
    assert second.sums("ragas.annotations", "outcome") == {"stored": spooled}


def test_a_corrupt_entry_is_counted_and_the_rest_replayed(make_rig, tmp_path):
    counted = Counted()
    rig = make_rig(ScriptedJudge(), metrics=counted.metrics, spool=_spool(tmp_path, counted))
    entries = [{"kind": "held", "spans": [{"name": "half a span"}]}, {"kind": "span"}]
    assert rig.processor.replay(entries) == 0
    assert counted.sums("ragas.spool", "event") == {"corrupt": 2}
    # The unreadable root's request, counted as written where it was spooled, ends
    # here as lost, so that the ledger still balances.
    assert counted.sums("ragas.spool.requests", "event") == {"claimed": 1}
    assert counted.sums("ragas.evaluations", "status") == {"lost": 1}


def test_a_long_spool_is_replayed_at_the_judges_pace_within_a_window(make_rig, tmp_path):
    first, second = Counted(), Counted()
    rig = make_rig(ScriptedJudge(mode="hang"), metrics=first.metrics,
                   spool=_spool(tmp_path, first))
    for _ in range(12):
        rag_request(rig.tracer)
    rig.processor.stop_scoring(0.1)
    rig.processor.shutdown(1.0)

    gate = threading.Event()
    nxt = make_rig(ScriptedJudge(0.8, gate=gate), metrics=second.metrics,
                   spool=_spool(tmp_path, second))
    most: list[int] = []
    replayer = threading.Thread(target=lambda: most.append(
        nxt.processor.replay(nxt.processor.spool.claim(), window=4)))
    replayer.start()
    time.sleep(0.5)
    assert nxt.processor.held_count == 4  # the rest wait for room, not in the hold
    gate.set()
    replayer.join(10)
    assert most == [12]
    assert nxt.processor.force_flush(5000)
    assert [evaluation_status(r) for r in nxt.named("rag")] == ["scored"] * 12


class Stuck(Backend):
    """A backend whose sends hang until ``gate`` is set, then store."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float) -> list[ItemFailure]:
        self.gate.wait(30)
        return super().send(batch, timeout_s)


def test_at_the_deadline_the_batch_in_flight_and_late_offers_go_to_the_spool_too():
    from ragas_trace.exporters.annotations.queue import AnnotationQueue

    counted = Counted()
    backend = Stuck()
    queue = AnnotationQueue(backend, counted.metrics, max_batch=2)
    items = [ScoreAnnotation(f"{i:032x}", f"{i:016x}", "faithfulness", 1.0, "pass", "",
                             "CODE", "local", 0.5) for i in range(5)]
    queue.offer(items[:3])
    deadline = time.monotonic() + 5
    while queue.pending != 3 or not queue._batch:  # the worker took a batch of two
        assert time.monotonic() < deadline
        time.sleep(0.01)
    spooled: list[ScoreAnnotation] = []

    def spill(sink: str, batch: Sequence[ScoreAnnotation]) -> int:
        spooled.extend(batch)
        return len(batch)

    assert queue.close(time.monotonic() + 0.3, spill)
    queue.offer(items[3:])  # late: its span's export ended after the shutdown began
    assert queue.join(time.monotonic() + 0.3) is False
    assert sorted(a.span_id for a in spooled) == sorted(a.span_id for a in items)
    backend.gate.set()  # the stuck send ends now: its outcome is the spool's to count
    time.sleep(0.2)
    assert counted.sums("ragas.annotations", "outcome") == {}


def test_without_a_spool_the_unscored_roots_are_said_at_warning(make_rig, caplog):
    import logging

    counted = Counted()
    rig = make_rig(ScriptedJudge(mode="hang"), metrics=counted.metrics)
    for _ in range(3):
        rag_request(rig.tracer)
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        rig.processor.stop_scoring(0.1)
        rig.processor.shutdown(1.0)
    assert [evaluation_status(r) for r in rig.named("rag")] == ["dropped"] * 3
    [line] = [r.getMessage() for r in caplog.records if "left unscored" in r.getMessage()]
    assert line.startswith("ragas-trace: 3 RAG request(s)") and "spool_dir" in line
    assert counted.sums("ragas.evaluations", "status") == {"dropped": 3}
