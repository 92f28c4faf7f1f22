"""Once a request is scored and exported, nothing in ragas-trace keeps its spans: a
background thread's local that still names the last request would keep its passages
and answer (megabytes, for some apps) alive for as long as the app is idle."""

from __future__ import annotations

import gc
import time
import weakref

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

import ragas_trace
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge
from weak_watch import WatchingExporter, alive


class Watch(SpanProcessor):
    """Weak references to every span the app ends."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref[ReadableSpan]] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.refs.append(weakref.ref(span))


@pytest.mark.parametrize("sample_rate", [1.0, 0.0])
def test_an_idle_pipeline_keeps_no_span_of_a_finished_request(monkeypatch, sample_rate):
    # Each span is exported as it comes (no flush asked), and the export worker then
    # waits a minute: a batch kept through that wait is still alive at the deadline.
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "60000")
    provider = TracerProvider()
    exporter = WatchingExporter()
    rt = ragas_trace.setup("retention", exporter=exporter, judge=ScriptedJudge(),
                           sample_rate=sample_rate, tracer_provider=provider,
                           handle_sigterm=False)
    watch = Watch()
    provider.add_span_processor(watch)
    try:
        for _ in range(3):
            rag_request(provider.get_tracer("test"), docs=("Paris is in France. " * 500,))
        # Released as soon as exported; the deadline only bounds a failing run.
        deadline = time.monotonic() + 10.0
        while (len(exporter.refs) < 9 or alive(watch.refs) or alive(exporter.refs)) \
                and time.monotonic() < deadline:
            gc.collect()
            time.sleep(0.05)
        assert len(watch.refs) == 9 and len(exporter.refs) >= 9
        assert alive(watch.refs) == [] and alive(exporter.refs) == []
    finally:
        rt.shutdown(5.0)
