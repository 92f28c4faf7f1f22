"""``setup(metrics_port=P)`` where P is taken: never raises, says once what it did."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client.parser import text_string_to_metric_families

import ragas_trace
from ragas_trace.testing.scripted_judge import ScriptedJudge


def test_a_taken_port_without_multiproc_dir_is_one_warning_not_an_error(caplog, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    first = ragas_trace.setup(service_name="a", judge=ScriptedJudge(), metrics_port=0,
                              tracer_provider=TracerProvider(), exporter="none")
    try:
        port = first.metrics_port
        assert port is not None
        with caplog.at_level(logging.WARNING, logger="ragas_trace"):
            second = ragas_trace.setup(service_name="b", judge=ScriptedJudge(),
                                       metrics_port=port, tracer_provider=TracerProvider(),
                                       exporter="none")
        try:
            assert second.metrics_port is None
            assert isinstance(second.meter_provider, NoOpMeterProvider)
            [warning] = [r.message for r in caplog.records if "metrics port" in r.message]
            assert f":{port} cannot be served" in warning
            assert "PROMETHEUS_MULTIPROC_DIR" in warning
        finally:
            assert second.shutdown(timeout_s=5)
    finally:
        assert first.shutdown(timeout_s=5)


# Both ways of serving, in a fresh interpreter each (prometheus_client reads
# PROMETHEUS_MULTIPROC_DIR once, at import): the same recordings, the same series.
_RECORD = textwrap.dedent("""
    import sys, urllib.request
    import ragas_trace
    from ragas_trace.scorer.outcome import EvaluationStatus
    from ragas_trace.testing.scripted_judge import ScriptedJudge
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(), metrics_port=0,
                           exporter="none")
    m = rt.pipeline.processor.metrics
    m.not_scored(EvaluationStatus.DROPPED, "faq", "j")
    m.faithfulness_unscored("no_context", "faq", "j")
    m.dropped("queue_full")
    m.export_lost(2, "queue_full")
    m.annotations("phoenix", "stored")
    m._scores[next(iter(m._scores))].record(0.55, {"service": "svc", "app": "faq", "judge": "j"})
    m._duration.record(0.3, {"judge": "j"})
    m._tokens.record(120, {"type": "prompt"})
    url = f"http://127.0.0.1:{rt.metrics_port}/metrics"
    sys.stdout.write(urllib.request.urlopen(url, timeout=10).read().decode())
""")


def _series(env: dict[str, str]) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
    text = subprocess.run([sys.executable, "-c", _RECORD], env=env, capture_output=True,
                          text=True, timeout=60, check=True).stdout
    return {(s.name, tuple(sorted((k, v) for k, v in s.labels.items()
                                  if not k.startswith("otel_scope"))), s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name != "target_info" and not s.name.endswith("_created")}


def test_multiprocess_series_are_the_exporters_series(tmp_path: Path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGAS_TRACE_", "OTEL_", "PROMETHEUS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(ragas_trace.__file__).parents[1]),
                                         env.get("PYTHONPATH", "")])
    single = _series(env)
    multi = _series({**env, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert {name for name, _, _ in single} >= {
        "ragas_evaluations_total", "ragas_faithfulness_bucket", "ragas_judge_duration_seconds_sum",
        "ragas_scorer_dropped_total", "ragas_export_lost_total", "ragas_held_spans"}
    assert multi == single


_DIES = textwrap.dedent("""
    import ragas_trace
    from ragas_trace.testing.scripted_judge import ScriptedJudge
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(), metrics_port=0,
                           exporter="none")
    m = rt.pipeline.processor.metrics
    m.observe(held=lambda: 5, queued=lambda: 2)
    m.dropped("queue_full")
""")


def _worker_env(multiproc_dir: Path) -> dict[str, str]:
    """A pre-fork worker's environment: this checkout's ragas_trace, the shared
    multiprocess folder, none of our settings from the test run."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGAS_TRACE_", "OTEL_", "PROMETHEUS_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(ragas_trace.__file__).parents[1]),
                                         env.get("PYTHONPATH", "")])
    env["PROMETHEUS_MULTIPROC_DIR"] = str(multiproc_dir)
    return env


def test_a_dead_processs_counts_stay_and_its_gauges_go(tmp_path: Path):
    from ragas_trace.exporters.multiprocess_metrics import MultiprocessCollector

    env = _worker_env(tmp_path)
    for _ in range(2):  # two workers that lived and died
        subprocess.run([sys.executable, "-c", _DIES], env=env, timeout=60, check=True)
    assert len(list(tmp_path.glob("gauge_livesum_*.db"))) == 2
    merged = {s.name: s.value for family in MultiprocessCollector(str(tmp_path)).collect()
              for s in family.samples}
    assert merged["ragas_scorer_dropped_total"] == 2.0
    assert merged.get("ragas_held_spans", 0.0) == 0.0  # not 10: nobody holds anything
    assert not list(tmp_path.glob("gauge_livesum_*.db"))


_FAILS = textwrap.dedent("""
    import ragas_trace
    from ragas_trace._internal_errors import record_internal_error
    from ragas_trace.testing.scripted_judge import ScriptedJudge
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(), metrics_port=0,
                           exporter="none")
    record_internal_error("test.forced", RuntimeError("a bug of ours"))
    record_internal_error("test.forced", RuntimeError("a bug of ours"))
    meter = rt.meter_provider.get_meter("ragas_trace")
    meter.refresh_gauges()  # what the refresher thread does every second
    meter.refresh_gauges()  # the same totals again add nothing
""")


def test_internal_errors_of_every_worker_are_summed(tmp_path: Path):
    from ragas_trace.exporters.multiprocess_metrics import MultiprocessCollector

    env = _worker_env(tmp_path)
    for _ in range(2):
        subprocess.run([sys.executable, "-c", _FAILS], env=env, timeout=60, check=True)
    merged = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for family in MultiprocessCollector(str(tmp_path)).collect()
              for s in family.samples}
    assert merged[("ragas_internal_errors_total", (("where", "test.forced"),))] == 4.0


def test_a_taken_port_is_said_once_per_server_not_once_per_worker(tmp_path: Path):
    from ragas_trace.metrics_port import _first_of_server

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = tmp_path / f".ragas-trace-port-9464-{dead}"  # a previous server's master
    stale.touch()
    assert _first_of_server(str(tmp_path), 9464) is True  # the first worker: WARNING
    assert _first_of_server(str(tmp_path), 9464) is False  # its siblings: DEBUG
    assert _first_of_server(str(tmp_path), 9465) is True  # another port
    assert not stale.exists()


# A worker that finds the port taken stands by: when the process holding the port
# frees it (gunicorn's reload stops the old workers after the new ones started), the
# running worker serves the merge.
_STANDBY = textwrap.dedent("""
    import socket, sys, time, urllib.request
    import ragas_trace
    from ragas_trace import metrics_port
    from ragas_trace.testing.scripted_judge import ScriptedJudge
    metrics_port.STANDBY_S = 0.1
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    rt = ragas_trace.setup(service_name="svc", judge=ScriptedJudge(), metrics_port=port,
                           exporter="none")
    rt.pipeline.processor.metrics.dropped("queue_full")
    time.sleep(0.5)
    print("before", rt.metrics_port)
    holder.close()
    deadline = time.monotonic() + 10
    while rt.metrics_port is None and time.monotonic() < deadline:
        time.sleep(0.05)
    print("after", rt.metrics_port == port)
    url = f"http://127.0.0.1:{port}/metrics"
    sys.stdout.write(urllib.request.urlopen(url, timeout=10).read().decode())
    rt.shutdown(timeout_s=5)
""")


def test_a_worker_that_found_the_port_taken_serves_it_once_freed(tmp_path: Path):
    out = subprocess.run([sys.executable, "-c", _STANDBY], env=_worker_env(tmp_path),
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "before None" in out and "after True" in out, out
    dropped = [s.value for family in text_string_to_metric_families(out.split("\n", 2)[2])
               for s in family.samples if s.name == "ragas_scorer_dropped_total"]
    assert dropped == [1.0]
