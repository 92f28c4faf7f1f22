"""``setup()`` with a spool: the exit path keeps what its deadline leaves unscored,
and the next ``setup()`` with the same directory scores it, off the app's thread."""

from __future__ import annotations

import time

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace import pipeline
from ragas_trace.config import Settings
from ragas_trace.testing.rag_spans import evaluation_status, rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge


def test_the_exit_deadline_spools_and_the_next_setup_scores(tmp_path):
    first = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="bot", judge=ScriptedJudge(mode="hang"),
                           exporter=first, tracer_provider=TracerProvider(),
                           spool_dir=str(tmp_path), exit_grace_s=1.0)
    tracer = rt.tracer_provider.get_tracer("t")
    for _ in range(4):
        rag_request(tracer)
    started = time.monotonic()
    assert rt.flush_for_exit() is False  # not delivered: kept
    assert time.monotonic() - started < 1.0 + 0.5  # one deadline for judge and export
    assert [s for s in first.get_finished_spans() if s.name == "rag"] == []
    assert len(list(tmp_path.glob("spool-*.jsonl"))) == 1

    second = InMemorySpanExporter()
    nxt = ragas_trace.setup(service_name="bot", judge=ScriptedJudge(0.7), exporter=second,
                            tracer_provider=TracerProvider(), spool_dir=str(tmp_path))
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            roots = [s for s in second.get_finished_spans() if s.name == "rag"]
            if len(roots) == 4:
                break
            time.sleep(0.05)
        assert [evaluation_status(r) for r in roots] == ["scored"] * 4
        assert list(tmp_path.iterdir()) == []
    finally:
        nxt.shutdown(5)


def test_the_spool_directory_beside_the_multiprocess_one_unless_named(monkeypatch, tmp_path):
    monkeypatch.delenv("RAGAS_TRACE_SPOOL_DIR", raising=False)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    assert Settings.load().spool_path is None
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert Settings.load().spool_path == str(tmp_path / "ragas-trace-spool")
    assert Settings.load(spool_dir="none").spool_path is None
    assert Settings.load(spool_dir="/var/lib/app/spool").spool_path == "/var/lib/app/spool"


def test_a_running_process_takes_over_what_a_process_exiting_after_its_start_spools(
        tmp_path, monkeypatch):
    # gunicorn's reload (SIGHUP) starts the new workers, then stops the old ones: what
    # the old ones spool is taken over by workers that are already running.
    monkeypatch.setattr(pipeline, "SPOOL_WATCH_S", 0.1)
    running = InMemorySpanExporter()
    new = ragas_trace.setup(service_name="bot", judge=ScriptedJudge(0.7), exporter=running,
                            tracer_provider=TracerProvider(), spool_dir=str(tmp_path))
    try:
        old = ragas_trace.setup(service_name="bot", judge=ScriptedJudge(mode="hang"),
                                exporter=InMemorySpanExporter(),
                                tracer_provider=TracerProvider(), spool_dir=str(tmp_path),
                                exit_grace_s=1.0)
        tracer = old.tracer_provider.get_tracer("t")
        for _ in range(3):
            rag_request(tracer)
        assert old.flush_for_exit() is False  # kept in the spool
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            roots = [s for s in running.get_finished_spans() if s.name == "rag"]
            if len(roots) == 3:
                break
            time.sleep(0.05)
        assert [evaluation_status(r) for r in roots] == ["scored"] * 3
        assert list(tmp_path.iterdir()) == []
    finally:
        new.shutdown(5)
