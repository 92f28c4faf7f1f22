"""The judge budget in US dollars per rolling day, with the OpenAI judge against the
loopback OpenAI server: reached mid-run, the rest of the requests are counted over
budget (status ``not_sampled``, reason ``usd_budget``), the cost counter equals the
priced usage of the server's replies, and the budget refills a day later (an
injected clock, no sleep). Unpriced models are refused at setup."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.results import JudgeUsage
from ragas_trace.scorer.pricing import DEFAULT_PRICES, judge_pricing
from ragas_trace.scorer.sampler import Sampler
from ragas_trace.testing.openai_server import FakeOpenAIServer, RecordedRequest
from ragas_trace.testing.rag_spans import evaluation_status, rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

DAY_S = 86400.0
CHAT, EMBEDDING = DEFAULT_PRICES["gpt-4o-mini"], DEFAULT_PRICES["text-embedding-3-small"]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def priced(requests: list[RecordedRequest]) -> float:
    """What the server's replies cost at the default prices of the judge's models."""
    usd = 0.0
    for r in requests:
        if r.path.endswith("/embeddings"):
            usd += r.prompt_tokens * EMBEDDING.input_usd / 1e6
        else:
            usd += (r.prompt_tokens * CHAT.input_usd
                    + r.completion_tokens * CHAT.output_usd) / 1e6
    return usd


def counter(reader: InMemoryMetricReader, name: str, **labels: str) -> float:
    data = reader.get_metrics_data()
    total = 0.0
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    attrs: dict[str, Any] = dict(point.attributes or {})
                    if labels.items() <= attrs.items():
                        total += point.value
    return total


def request(rig: Any, i: int) -> str:
    """Request ``i`` (each asks something a little different), flushed; its status."""
    rag_request(rig.tracer, f"What is the capital of country number {i}?",
                f"The capital of country number {i} is Paris. It has {i} bridges.",
                (f"Paris is the capital of country number {i}.", "Paris has many bridges."))
    assert rig.processor.force_flush(30_000)
    root = [s for s in rig.spans() if s.name == "rag"][-1]
    return str(evaluation_status(root))


def test_a_days_usd_budget_reached_mid_run_then_refilled(make_rig, server):
    judge = OpenAIJudge(base_url=server.base_url, api_key="sk-test")
    pricing, missing = judge_pricing(judge)
    assert pricing is not None and missing == []
    # What one request costs, to set a budget that a few requests use up.
    calibration = make_rig(OpenAIJudge(base_url=server.base_url, api_key="sk-test"))
    assert request(calibration, 0) == "scored"
    one = priced(server.recorded())
    assert one > 0
    budget = 2.5 * one
    server.reset_counters()

    clock = Clock()
    reader = InMemoryMetricReader()
    metrics = ScorerMetrics(MeterProvider(metric_readers=[reader]), "svc")
    rig = make_rig(judge, sampler=Sampler(usd_budget_per_day=budget, clock=clock),
                   pricing=pricing, metrics=metrics)
    statuses, spent, expected = [], 0.0, []
    seen = 0
    for i in range(1, 7):
        expected.append("not_sampled" if spent >= budget else "scored")
        statuses.append(request(rig, i))
        calls = server.recorded()
        spent += priced(calls[seen:])
        seen = len(calls)
        clock.now += 60.0  # a request a minute: all within the day
    assert statuses == expected
    scored, refused = statuses.count("scored"), statuses.count("not_sampled")
    assert scored >= 1 and refused >= 1 and statuses[-1] == "not_sampled"  # mid-run
    roots = [s for s in rig.spans() if s.name == "rag"]
    assert [s.attributes.get(sc.RAGAS_EVALUATION_REASON) for s in roots
            if evaluation_status(s) == "not_sampled"] == ["usd_budget"] * refused
    assert counter(reader, "ragas.scorer.over_budget", budget="usd_budget") == refused
    assert counter(reader, "ragas.evaluations", status="not_sampled") == refused
    # The counter is the priced usage of exactly the replies the judge got.
    assert counter(reader, "ragas.judge.cost.usd", judge="openai:gpt-4o-mini") == \
        pytest.approx(priced(server.recorded()), rel=1e-12)
    assert counter(reader, "ragas.judge.cost.usd") == pytest.approx(spent, rel=1e-12)

    # A day after the first charges left the window, the budget is whole again.
    clock.now += DAY_S
    assert request(rig, 7) == "scored"
    assert counter(reader, "ragas.judge.cost.usd") == \
        pytest.approx(priced(server.recorded()), rel=1e-12)
    assert counter(reader, "ragas.scorer.over_budget") == refused


def test_an_unpriced_model_is_refused_at_setup_with_the_setting_to_use(server):
    judge = OpenAIJudge(model="my-own-model", base_url=server.base_url, api_key="sk-test")
    with pytest.raises(ValueError, match=r"judge_budget_usd_per_day.*'my-own-model'.*"
                                         r"judge_prices"):
        ragas_trace.setup(judge=judge, exporter="none", tracer_provider=TracerProvider(),
                          judge_budget_usd_per_day=1.0, handle_sigterm=False)
    # Priced by setting it is accepted; without a budget it is only not counted.
    for settings in ({"judge_budget_usd_per_day": 1.0,
                      "judge_prices": "my-own-model=0.5/1.5"}, {}):
        rt = ragas_trace.setup(judge=judge, exporter="none", tracer_provider=TracerProvider(),
                               handle_sigterm=False, **settings)
        assert (rt.processor.pricing is not None) == bool(settings)
        rt.shutdown(2.0)


def test_a_judge_that_names_no_model_costs_nothing_and_never_trips_the_budget():
    exporter = InMemorySpanExporter()
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter=exporter,
                           tracer_provider=TracerProvider(), judge_budget_usd_per_day=1e-9,
                           handle_sigterm=False)
    try:
        assert rt.processor.pricing is not None
        assert rt.processor.pricing.cost_usd(JudgeUsage(100, 20)) == 0.0
        for _ in range(3):
            rag_request(rt.tracer_provider.get_tracer("t"))
            assert rt.force_flush(5.0)
    finally:
        rt.shutdown(2.0)
    assert [evaluation_status(s) for s in exporter.get_finished_spans()
            if s.name == "rag"] == ["scored"] * 3
