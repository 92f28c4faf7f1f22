"""A judge that fails, throttles, talks garbage, hangs or is down: the app gets its
answer on its own thread without waiting for the judge, every span is exported
within the hold timeout plus one second with a status saying why, and the
failures are counted."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.results import ALL_METRICS, Metric, Scores
from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver, WireSpan

HOLD_TIMEOUT_S = 2.0
REQUESTS = 3


class ThreadRecordingJudge:
    """Delegates to a judge and records which threads ran it."""

    def __init__(self, inner: OpenAIJudge) -> None:
        self.inner = inner
        self.threads: set[int] = set()

    @property
    def name(self) -> str:
        return self.inner.name

    async def evaluate(self, question: str | None, contexts: Sequence[str], answer: str | None,
                       metrics: frozenset[Metric] = ALL_METRICS) -> Scores:
        self.threads.add(threading.get_ident())
        return await self.inner.evaluate(question, contexts, answer, metrics)

    async def aclose(self) -> None:
        await self.inner.aclose()


def evaluations_by_status(reader: InMemoryMetricReader) -> dict[str, int]:
    counts: dict[str, int] = {}
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "ragas.evaluations":
                    for point in metric.data.data_points:
                        if not point.value:
                            continue  # a series created at zero (setup())
                        status = str(point.attributes["status"])
                        counts[status] = counts.get(status, 0) + int(point.value)
    return counts


def roots(spans: list[WireSpan]) -> list[WireSpan]:
    return [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN]


@pytest.mark.parametrize(("fault", "status", "reason"), [
    (Fault.SERVER_ERROR, "failed", None),
    (Fault.RATE_LIMIT, "failed", None),
    (Fault.INVALID_JSON, "failed", None),
    (Fault.HANG, "timeout", "hold_timeout"),
    ("down", "failed", None),
])
def test_judge_faults(rag_chain, fault, status, reason):
    reader = InMemoryMetricReader()
    with FakeOpenAIServer() as server, OtlpHttpReceiver() as receiver:
        if fault == "down":
            server.stop()
        else:
            server.inject(fault, times=None, retry_after_s=0.05)
        judge = ThreadRecordingJudge(OpenAIJudge(base_url=server.base_url, api_key="test",
                                                 timeout_s=30, max_retries=0))
        rt = ragas_trace.setup(
            judge=judge, hold_timeout_s=HOLD_TIMEOUT_S, score_timeout_s=30,
            tracer_provider=TracerProvider(),
            meter_provider=MeterProvider(metric_readers=[reader]),
            exporter=BatchSpanProcessor(  # a short delay: the wait below measures us
                OTLPSpanExporter(endpoint=receiver.endpoint + "/v1/traces"),
                schedule_delay_millis=50))
        try:
            handler = rt.langchain_handler()
            for _ in range(REQUESTS):
                answer = rag_chain.invoke("What is the capital of France?",
                                          config={"callbacks": [handler]})
                assert answer == "Paris is the capital of France."
            # every root leaves within the hold timeout + 1 s, without a flush
            assert receiver.wait_for(lambda spans: len(roots(spans)) == REQUESTS,
                                     timeout=HOLD_TIMEOUT_S + 1.0)
            if fault is not Fault.HANG:  # a hanging judge would hold the flush to its end
                assert rt.force_flush(timeout_s=10)
            counts = evaluations_by_status(reader)
        finally:
            server.stop()  # releases hanging requests
            rt.shutdown(timeout_s=5)
        exported = roots(receiver.spans())
    assert judge.threads and threading.get_ident() not in judge.threads
    assert [s.attributes[sc.RAGAS_EVALUATION_STATUS] for s in exported] == [status] * REQUESTS
    if reason is not None:
        assert {s.attributes[sc.RAGAS_EVALUATION_REASON] for s in exported} == {reason}
    assert all(sc.RAGAS_FAITHFULNESS not in s.attributes for s in exported)
    if fault is not Fault.HANG:
        assert counts == {"failed": REQUESTS}
