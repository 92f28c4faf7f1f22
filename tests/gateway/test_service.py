"""The gateway end to end: official OTLP exporters as senders, a downstream OTLP
receiver on 127.0.0.1, real judges."""

from collections import Counter

from gateway_helpers import grpc_sender, http_sender, settings

from ragas_trace import semconv as sc
from ragas_trace.gateway.service import Gateway
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver
from ragas_trace.testing.rag_traces import openinference_request, openllmetry_request, plain_request

OI_SPANS, OL_SPANS, PLAIN_SPANS = 5, 4, 2


def test_scoring_off_forwards_every_span_once(gateway: Gateway,
                                              downstream: OtlpGrpcReceiver) -> None:
    assert gateway.grpc is not None and gateway.http is not None
    grpc_app = grpc_sender(gateway.grpc.endpoint)
    http_app = http_sender(gateway.http.endpoint)
    for i in range(5):
        openinference_request(grpc_app.get_tracer("oi"), i)
        openllmetry_request(http_app.get_tracer("ol"), i)
        plain_request(grpc_app.get_tracer("plain"), i)
    expected = 5 * (OI_SPANS + OL_SPANS + PLAIN_SPANS)
    assert downstream.wait_for(lambda spans: len(spans) >= expected, timeout=10)
    assert gateway.stop(timeout_s=5)
    spans = downstream.spans()
    assert len(spans) == expected
    assert len({(s.trace_id, s.span_id) for s in spans}) == expected
    root = next(s for s in spans if s.name == "RunnableSequence")
    assert root.resource["service.name"] == "sender"
    assert root.attributes[sc.INPUT_VALUE]
    assert not any(k.startswith("ragas.") for s in spans for k in s.attributes)


def test_local_judge_scores_each_rag_root_once_across_batches() -> None:
    with OtlpHttpReceiver() as downstream, Gateway(settings(
            forward_endpoint=downstream.endpoint, forward_protocol="http",
            judge="local", sample_rate=1.0)) as gateway:
        assert gateway.grpc is not None
        app = grpc_sender(gateway.grpc.endpoint)
        for i in range(3):
            openinference_request(app.get_tracer("oi"), i)
            openllmetry_request(app.get_tracer("ol"), i)
        roots = {"RunnableSequence", "RetrieverQueryEngine.workflow"}

        def scored(spans: list) -> bool:
            return sum(1 for s in spans if s.name in roots
                       and sc.RAGAS_EVALUATION_STATUS in s.attributes) >= 6
        assert downstream.wait_for(scored, timeout=20)
        assert gateway.stop(timeout_s=10)
    spans = downstream.spans()
    root_spans = [s for s in spans if s.name in roots]
    assert len(root_spans) == 6
    assert Counter(s.attributes[sc.RAGAS_EVALUATION_STATUS] for s in root_spans) == \
        {"scored": 6}
    for span in root_spans:
        for metric in (sc.RAGAS_FAITHFULNESS, sc.RAGAS_ANSWER_RELEVANCE,
                       sc.RAGAS_CONTEXT_RELEVANCE):
            assert 0.0 <= span.attributes[metric] <= 1.0
    # Everything else once, plus one evaluation span per scored root.
    others = Counter(s.name for s in spans if s.name not in roots)
    assert others["VectorStoreRetriever"] == 3
    assert others["VectorIndexRetriever.task"] == 3
    evaluations = [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_EVALUATOR]
    assert len(evaluations) == 6
    assert len({(s.trace_id, s.span_id) for s in spans}) == len(spans)


def test_sampling_leaves_unsampled_roots_marked_and_unscored(
        downstream: OtlpGrpcReceiver) -> None:
    with Gateway(settings(forward_endpoint=downstream.endpoint, judge="local",
                          sample_rate=0.0)) as gateway:
        assert gateway.grpc is not None
        app = grpc_sender(gateway.grpc.endpoint)
        for i in range(3):
            openinference_request(app.get_tracer("oi"), i)
        assert downstream.wait_for(lambda spans: len(spans) >= 3 * OI_SPANS, timeout=10)
    roots = [s for s in downstream.spans() if s.name == "RunnableSequence"]
    assert [r.attributes[sc.RAGAS_EVALUATION_STATUS] for r in roots] == ["not_sampled"] * 3
    assert not any(sc.RAGAS_FAITHFULNESS in r.attributes for r in roots)


def test_scoring_off_forwarding_over_http_reads_whole_requests() -> None:
    with OtlpHttpReceiver() as downstream, Gateway(settings(
            forward_endpoint=downstream.endpoint, forward_protocol="http")) as gateway:
        assert gateway.grpc is not None
        app = grpc_sender(gateway.grpc.endpoint)
        openllmetry_request(app.get_tracer("ol"), 0)
        assert downstream.wait_for(lambda spans: len(spans) == OL_SPANS, timeout=10)
    names = {s.name for s in downstream.spans()}
    assert "VectorIndexRetriever.task" in names


def test_metrics_endpoint_shows_gateway_and_scoring_metrics(
        downstream: OtlpGrpcReceiver) -> None:
    import urllib.request

    with Gateway(settings(forward_endpoint=downstream.endpoint, judge="local",
                          sample_rate=1.0, metrics_port=0)) as gateway:
        assert gateway.grpc is not None and gateway.metrics is not None
        app = grpc_sender(gateway.grpc.endpoint)
        openinference_request(app.get_tracer("oi"), 0)
        plain_request(app.get_tracer("plain"), 0)
        assert downstream.wait_for(lambda spans: any(
            sc.RAGAS_FAITHFULNESS in s.attributes for s in spans), timeout=20)
        url = f"http://127.0.0.1:{gateway.metrics.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
    for name in ("ragas_gateway_spans_received_total", "ragas_gateway_spans_forwarded_total",
                 "ragas_gateway_forward_queue_spans", "ragas_gateway_held_traces",
                 "ragas_faithfulness_bucket", "ragas_evaluations_total"):
        assert name in text, name
    received = [line for line in text.splitlines()
                if line.startswith("ragas_gateway_spans_received_total")]
    assert received and float(received[0].split()[-1]) == OI_SPANS + PLAIN_SPANS


def test_the_listed_apps_series_exist_at_zero_before_any_request(
        downstream: OtlpGrpcReceiver) -> None:
    import urllib.request

    with Gateway(settings(forward_endpoint=downstream.endpoint, judge="local", metrics_port=0,
                          app_names=("shop",))) as gateway:
        assert gateway.metrics is not None
        url = f"http://127.0.0.1:{gateway.metrics.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
    zeros = {line.split("{")[0] for line in text.splitlines()
             if 'app="shop"' in line and line.endswith(" 0.0")}
    assert {"ragas_faithfulness_count", "ragas_faithfulness_squares_total",
            "ragas_verdicts_total", "ragas_evaluations_total"} <= zeros
    assert any('app="unknown"' in line for line in text.splitlines())
