"""Service mode emits the evaluation event too: one ``gen_ai.evaluation.result`` log
record per scored metric of each RAG root the gateway scores, in that root's
context, to the OTLP logs endpoint of the environment (not the spans' next hop)."""

import pytest
from gateway_helpers import grpc_sender, settings

from ragas_trace import semconv as sc
from ragas_trace.gateway.service import Gateway
from ragas_trace.results import Metric
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver
from ragas_trace.testing.rag_traces import openinference_request
from ragas_trace.testing.scripted_judge import ScriptedJudge


def test_the_gateway_emits_one_record_per_scored_metric_of_each_root(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
                 "OTEL_LOGS_EXPORTER", "RAGAS_TRACE_EVALUATION_LOGS"):
        monkeypatch.delenv(name, raising=False)
    with OtlpHttpReceiver() as downstream, OtlpHttpReceiver(signals=("logs",)) as logs:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", logs.endpoint + "/v1/logs")
        with Gateway(settings(forward_endpoint=downstream.endpoint, forward_protocol="http"),
                     judge=ScriptedJudge(0.8)) as gateway:
            assert gateway.grpc is not None
            app = grpc_sender(gateway.grpc.endpoint)
            for i in range(2):
                openinference_request(app.get_tracer("oi"), i)
            assert downstream.wait_for(lambda spans: sum(
                1 for s in spans if s.name == "RunnableSequence"
                and s.attributes.get(sc.RAGAS_EVALUATION_STATUS) == "scored") >= 2, timeout=20)
            assert gateway.stop(timeout_s=10)
        records = logs.logs()
        roots = [s for s in downstream.spans() if s.name == "RunnableSequence"]
    assert downstream.logs() == []  # not sent along with the spans
    assert len(roots) == 2 and len(records) == 2 * len(Metric)
    for root in roots:
        mine = [r for r in records if (r.trace_id, r.span_id) == (root.trace_id, root.span_id)]
        assert sorted(r.attributes[sc.GEN_AI_EVALUATION_NAME] for r in mine) == \
            sorted(str(m) for m in Metric)
        assert {r.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] for r in mine} == {0.8}
        assert {r.event_name for r in mine} == {sc.GEN_AI_EVALUATION_RESULT}
