"""The threads ragas-trace starts in the app block the app's signals, so a SIGTERM or
Ctrl-C sent to the process reaches a thread that can wake Python's handler."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")


def blocked(native_id: int) -> set[int]:
    """The signals a thread of this process blocks, read from the kernel."""
    status = Path(f"/proc/self/task/{native_id}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("SigBlk:")), 16)
    return {sig for sig in range(1, 65) if mask >> (sig - 1) & 1}


def test_our_threads_block_the_apps_signals_and_the_main_thread_does_not():
    exporter = InMemorySpanExporter()
    rt = ragas_trace.setup(judge=ScriptedJudge(), tracer_provider=TracerProvider(),
                           exporter=exporter)
    try:
        rag_request(rt.tracer_provider.get_tracer("t"))
        assert rt.force_flush(timeout_s=10)
        ours = [t for t in threading.enumerate() if t.name.startswith("ragas-trace-")]
        assert {"ragas-trace-scorer", "ragas-trace-export"} <= {t.name for t in ours}
        for thread in ours:
            assert thread.native_id is not None
            assert {signal.SIGTERM, signal.SIGINT, signal.SIGHUP} <= blocked(thread.native_id), \
                thread.name
        main = threading.main_thread().native_id
        assert main is not None and signal.SIGTERM not in blocked(main)
        assert signal.SIGINT not in blocked(threading.get_native_id())  # the caller's mask restored
    finally:
        assert rt.shutdown(timeout_s=5)
