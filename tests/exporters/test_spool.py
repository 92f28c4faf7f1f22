"""The spool on its own: bounded in entries and bytes, claimed once by whoever
starts next, and a full, corrupt or unwritable one said and counted, never raised."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragas_trace.exporters.span_json import span_from_json, span_to_json
from ragas_trace.exporters.spool import Spool
from ragas_trace.testing.rag_spans import rag_request


class Events:
    def __init__(self) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()

    def __call__(self, kind: str, event: str, n: int) -> None:
        self.counts[(kind, event)] += n


def _spool(path: Path, events: Events | None = None, *, max_bytes: int = 1 << 20,
           max_entries: int = 1000) -> Spool:
    return Spool(str(path), max_bytes=max_bytes, max_entries=max_entries, on_event=events)


def _entries(n: int, kind: str = "annotation") -> list[dict[str, object]]:
    return [{"kind": kind, "annotation": {"sink": "phoenix", "n": i}} for i in range(n)]


def test_what_one_process_writes_the_next_claims_once(tmp_path):
    events = Events()
    assert _spool(tmp_path, events).write(_entries(5)) == 5
    assert len(list(tmp_path.glob("spool-*.jsonl"))) == 1
    claimed = _spool(tmp_path, events).claim()
    assert [e["annotation"]["n"] for e in claimed] == [0, 1, 2, 3, 4]  # type: ignore[index]
    assert _spool(tmp_path, events).claim() == []
    assert list(tmp_path.iterdir()) == []  # read and deleted
    assert events.counts == {("annotation", "written"): 5, ("annotation", "claimed"): 5}


def test_bounded_in_entries_the_rest_said_and_counted(tmp_path, caplog):
    events = Events()
    spool = _spool(tmp_path, events, max_entries=7)
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        assert spool.write(_entries(5)) == 5
        assert spool.write(_entries(5)) == 2  # the bound counts the files already there
        assert spool.write(_entries(1)) == 0
    assert events.counts[("annotation", "full")] == 4
    assert len(_spool(tmp_path).claim()) == 7
    assert sum("spool full" in r.getMessage() for r in caplog.records) == 1  # once


def test_bounded_in_bytes(tmp_path):
    line = len(json.dumps(_entries(1)[0], separators=(",", ":"))) + 1
    events = Events()
    assert _spool(tmp_path, events, max_bytes=3 * line + 1).write(_entries(10)) == 3
    assert events.counts[("annotation", "full")] == 7
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 3 * line + 1


def test_unwritable_spool_is_said_and_counted_never_raised(tmp_path, caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the spool should be")
    events = Events()
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        assert _spool(blocker / "spool", events).write(_entries(3)) == 0
    assert events.counts == {("annotation", "unwritable"): 3}
    assert any("spool unwritable" in r.getMessage() for r in caplog.records)
    assert _spool(blocker / "spool").claim() == []


def test_corrupt_lines_and_files_are_skipped_and_counted(tmp_path, caplog):
    events = Events()
    good = json.dumps({"kind": "annotation", "annotation": {"sink": "phoenix"}})
    (tmp_path / "spool-1-1-4.jsonl").write_text(
        f"{good}\n{{not json\n[1, 2]\n{{\"kind\": \"martian\"}}\n{good}\n")
    (tmp_path / "spool-1-2-1.jsonl").write_bytes(b"\xff\xfe" * 10)
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        claimed = _spool(tmp_path, events).claim()
    assert len(claimed) == 2
    assert events.counts[("held", "corrupt")] == 4
    assert any("corrupt line(s)" in r.getMessage() for r in caplog.records)
    assert list(tmp_path.iterdir()) == []


def test_a_file_over_the_byte_bound_is_not_read(tmp_path):
    (tmp_path / "spool-1-1-1.jsonl").write_text("x" * 5000)
    events = Events()
    assert _spool(tmp_path, events, max_bytes=1000).claim() == []
    assert events.counts[("held", "corrupt")] == 1


def test_a_claim_whose_claimer_died_unread_is_claimed_again(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    good = json.dumps({"kind": "annotation", "annotation": {"sink": "phoenix"}})
    (tmp_path / f"claimed-{dead}-spool-9-9-1.jsonl").write_text(good + "\n")
    (tmp_path / f"claimed-{os.getppid()}-spool-9-8-1.jsonl").write_text(good + "\n")  # alive
    assert len(_spool(tmp_path).claim()) == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"claimed-{os.getppid()}-spool-9-8-1.jsonl"]


def _claim_into(path: str, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    out.put([e["annotation"]["n"] for e in Spool(path, max_bytes=1 << 20,
                                                 max_entries=1000).claim()])


def test_workers_starting_together_each_entry_claimed_by_one(tmp_path):
    for part in range(8):  # eight exiting workers, one file each
        assert _spool(tmp_path).write(
            [{"kind": "annotation", "annotation": {"n": part * 10 + i}} for i in range(10)]) == 10
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    workers = [context.Process(target=_claim_into, args=(str(tmp_path), out))
               for _ in range(4)]
    for worker in workers:
        worker.start()
    claimed = [n for _ in workers for n in out.get(timeout=30)]
    for worker in workers:
        worker.join(30)
    assert sorted(claimed) == list(range(80))


def test_spans_survive_the_round_trip():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rag_request(provider.get_tracer("t"))
    for span in exporter.get_finished_spans():
        back = span_from_json(json.loads(json.dumps(span_to_json(span))))
        assert back.context == span.context
        assert back.parent == span.parent
        assert (back.name, back.kind, back.start_time, back.end_time) == (
            span.name, span.kind, span.start_time, span.end_time)
        assert dict(back.attributes or {}) == dict(span.attributes or {})
        assert back.status.status_code == span.status.status_code
        assert back.resource.attributes == span.resource.attributes
        assert [(e.name, e.timestamp) for e in back.events] == [
            (e.name, e.timestamp) for e in span.events]
        assert back.instrumentation_scope == span.instrumentation_scope


def test_malformed_span_objects_raise_value_errors():
    with pytest.raises((KeyError, TypeError, ValueError)):
        span_from_json({"name": "x"})


def test_a_claim_can_take_one_file_at_a_time(tmp_path):
    for _ in range(3):
        _spool(tmp_path).write(_entries(2))
    spool = _spool(tmp_path)
    taken = [len(spool.claim(max_files=1)) for _ in range(4)]
    assert taken == [2, 2, 2, 0]


def test_the_files_are_the_app_users_only(tmp_path):
    spool_dir = tmp_path / "spool"
    _spool(spool_dir).write(_entries(1))
    assert spool_dir.stat().st_mode & 0o777 == 0o700
    (published,) = spool_dir.glob("spool-*.jsonl")
    assert published.stat().st_mode & 0o777 == 0o600
