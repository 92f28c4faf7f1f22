"""The recommended pre-fork set-up: app workers with ``RAGAS_TRACE_JUDGE=off`` export
their spans as they are to the host's scoring sidecar and load no judge (no model,
no scorer, no scorer thread), under gunicorn with 4 ``UvicornWorker``s."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ragas_trace import semconv as sc
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver

APP_DIR = Path(__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ask(port: int, deadline: float) -> dict[str, Any]:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
                return dict(json.loads(r.read()))
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_app_workers_under_the_recommended_set_up_load_no_judge() -> None:
    pytest.importorskip("gunicorn")
    pytest.importorskip("uvicorn")
    port = _free_port()
    with OtlpHttpReceiver() as sidecar:  # stands for `ragas-trace serve`
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("RAGAS_TRACE_", "OTEL_", "PROMETHEUS_MULTIPROC_DIR"))}
        env.update({"RAGAS_TRACE_JUDGE": "off", "OTEL_EXPORTER_OTLP_ENDPOINT": sidecar.endpoint,
                    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                    "PYTHONPATH": os.pathsep.join(filter(None, [
                        str(APP_DIR.parent / "src"), env.get("PYTHONPATH")]))})
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "judge_off_app:app", "--chdir", str(APP_DIR),
             "-k", "uvicorn.workers.UvicornWorker", "-w", "4", "-b", f"127.0.0.1:{port}"],
            cwd=APP_DIR, env=env)
        reports: dict[int, dict[str, Any]] = {}
        try:
            deadline = time.monotonic() + 120
            while len(reports) < 4 and time.monotonic() < deadline:
                answer = _ask(port, deadline)
                reports[answer["pid"]] = answer
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
        assert len(reports) == 4, f"answers came from {len(reports)} workers only"
        for answer in reports.values():
            assert answer["judge_modules"] == []
            assert not [t for t in answer["threads"] if t.startswith("ragas")]
            assert answer["processors"] == ["BatchSpanProcessor"]
        # The RAG roots reach the sidecar as recorded: no score, no status added here.
        assert sidecar.wait_for(lambda spans: sum(s.name == "rag" for s in spans) >= 4, 30)
    roots = [s for s in sidecar.spans() if s.name == "rag"]
    assert roots and not any(k.startswith("ragas.evaluation") or k == sc.RAGAS_FAITHFULNESS
                             for s in roots for k in s.attributes)


def test_judge_off_exports_spans_as_recorded_and_builds_no_scorer() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import ragas_trace
    from ragas_trace.testing.rag_spans import rag_request

    exported = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="app", judge="off", exporter=exported,
                           tracer_provider=TracerProvider())
    try:
        assert rt.pipeline is None and rt.settings.judge == "off"
        with pytest.raises(RuntimeError, match="does not score"):
            _ = rt.processor
        rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(5.0)
        assert sorted(s.name for s in exported.get_finished_spans()) == ["llm", "rag",
                                                                        "retriever"]
        assert not any(k.startswith("ragas.evaluation")
                       for s in exported.get_finished_spans() for k in s.attributes or {})
    finally:
        assert rt.shutdown(5.0)


def test_off_is_a_judge_name_for_setup_only() -> None:
    from ragas_trace.config import Settings
    from ragas_trace.pipeline import make_judge

    assert Settings.load(judge="off", env={}).judge == "off"
    with pytest.raises(ValueError, match="judge"):
        Settings.load(judge="off:x", env={})
    with pytest.raises(ValueError, match="sidecar"):
        make_judge(Settings.load(judge="off", env={}))
