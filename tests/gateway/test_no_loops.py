"""The gateway cannot be made to loop or amplify (issue 24, rows 5, 6, 7, 13): a
request it could never queue is refused for good, copies of a root are scored once,
span names make no metric labels, invalid UTF-8 costs only its own spans. Real
sockets; the next hop is a real OTLP receiver."""

from __future__ import annotations

import base64
import http.client
import json
import re
import urllib.request
from collections import Counter
from collections.abc import Callable

import grpc
import pytest
from gateway_helpers import settings
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ragas_trace import semconv as sc
from ragas_trace.gateway.service import Gateway
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver, WireSpan
from ragas_trace.testing.rag_traces import plain_request

PB = {"Content-Type": "application/x-protobuf"}
_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _plain(traces: int, first: int = 0) -> ExportTraceServiceRequest:
    """``traces`` plain traces, 2 spans each, in one request."""
    tracing = InMemoryTracing()
    for i in range(first, first + traces):
        plain_request(tracing.tracer, i)
    return encode_spans(tracing.spans())


def _post(gw: Gateway, body: bytes) -> tuple[int, bytes]:
    assert gw.http is not None
    host, port = gw.http.server_address[:2]
    conn = http.client.HTTPConnection(str(host), port, timeout=20)
    try:
        conn.request("POST", "/v1/traces", body=body, headers=PB)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# --- row 7: a request the queue can never admit -------------------------------------

def test_a_request_larger_than_the_queue_is_refused_for_good_not_retried_for_ever(
        downstream: OtlpGrpcReceiver) -> None:
    # --queue-spans 100: receivers admit up to 90 spans; 200 can never fit.
    too_many = _plain(100).SerializeToString()
    with Gateway(settings(forward_endpoint=downstream.endpoint, queue_spans=100)) as gw:
        status, body = _post(gw, too_many)
        assert status == 413
        assert b"--queue-spans" in body and b"200 spans" in body
        assert gw.grpc is not None
        with grpc.insecure_channel(gw.grpc.endpoint) as channel:
            with pytest.raises(grpc.RpcError) as err:
                channel.unary_unary(_EXPORT)(too_many, timeout=5)
        assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--queue-spans" in (err.value.details() or "")
        # No RetryInfo: OTLP senders must not retry it.
        assert not any(key == "google.rpc.retryinfo-bin"
                       for key, _ in err.value.trailing_metadata() or ())
        # A request that fits still goes through.
        assert _post(gw, _plain(10, first=500).SerializeToString())[0] == 200
        assert downstream.wait_for(lambda spans: len(spans) == 20, timeout=10)
        refused = gw.stats.snapshot()["requests_refused"]
    assert refused == {"over_queue_capacity": 2}


# --- row 5: senders' span names make no `app` label values --------------------------

def _rag_traces(names: list[str], app_names: dict[int, str] | None = None
                ) -> list[ExportTraceServiceRequest]:
    """One RAG trace (root CHAIN named ``names[i]`` with a question and an answer,
    one retrieval) per name, 500 spans a request."""
    tracing = InMemoryTracing()
    for i, name in enumerate(names):
        attributes = {sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: f"question {i}?",
                      sc.OUTPUT_VALUE: f"answer {i}"}
        if app_names and i in app_names:
            attributes[sc.RAGAS_APP_NAME] = app_names[i]
        with tracing.tracer.start_as_current_span(name, attributes=attributes):
            with tracing.tracer.start_as_current_span("retrieve", attributes={
                    sc.SPAN_KIND: sc.KIND_RETRIEVER,
                    sc.document_key(0, sc.DOCUMENT_CONTENT): f"passage {i}"}):
                pass
    spans = list(tracing.spans())
    return [encode_spans(spans[i:i + 500]) for i in range(0, len(spans), 500)]


def _metric_labels(gw: Gateway, metric: str, label: str) -> Counter[str]:
    assert gw.metrics is not None
    url = f"http://127.0.0.1:{gw.metrics.port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out: Counter[str] = Counter()
    for line in text.splitlines():
        if line.startswith(metric + "{"):
            match = re.search(label + r'="([^"]*)"', line)
            assert match is not None, line
            out[match.group(1)] += int(float(line.rsplit(" ", 1)[1]))
    return out


def test_5000_root_span_names_give_one_app_label(downstream: OtlpGrpcReceiver) -> None:
    names = [f"chain-{i}" for i in range(5000)] + ["support-bot", "whatever"]
    requests = _rag_traces(names, app_names={5001: "billing"})
    with Gateway(settings(forward_endpoint=downstream.endpoint, judge="local",
                          sample_rate=0.0, metrics_port=0, max_wait_s=30.0,
                          app_names="support-bot")) as gw:
        for request in requests:
            assert _post(gw, request.SerializeToString())[0] == 200
        assert downstream.wait_for(lambda spans: len(spans) == 2 * len(names), timeout=60)
        apps = _metric_labels(gw, "ragas_evaluations_total", "app")
    # The listed name and ragas.app.name are labels; 5,000 unlisted names are one.
    assert apps == {"unknown": 5000, "support-bot": 1, "billing": 1}


# --- row 6: copies of one root are scored once ---------------------------------------

def _one_rag_trace(i: int) -> tuple[ExportTraceServiceRequest, bytes]:
    """A RAG trace in one request, and its root's span id."""
    (request,) = _rag_traces([f"chain-{i}"])
    spans = request.resource_spans[0].scope_spans[0].spans
    root = next(s for s in spans if not s.parent_span_id)
    return request, bytes(root.span_id)


def _with_copies(request: ExportTraceServiceRequest, root_id: bytes, copies: int,
                 keep_others: bool = True) -> ExportTraceServiceRequest:
    out = ExportTraceServiceRequest()
    out.CopyFrom(request)
    spans = out.resource_spans[0].scope_spans[0].spans
    root = next(s for s in spans if s.span_id == root_id)
    if not keep_others:
        del spans[:]
    for _ in range(copies):
        spans.add().CopyFrom(root)
    return out


def test_500_copies_of_a_root_are_one_judge_run_one_evaluation_span_one_count(
        downstream: OtlpGrpcReceiver) -> None:
    from ragas_trace.judges.openai_judge import OpenAIJudge
    from ragas_trace.testing.openai_server import FakeOpenAIServer

    reference, _ = _one_rag_trace(0)
    replayed, root_id = _one_rag_trace(1)
    with FakeOpenAIServer() as server, Gateway(
            settings(forward_endpoint=downstream.endpoint, judge="openai", sample_rate=1.0,
                     metrics_port=0),
            judge=OpenAIJudge(base_url=server.base_url, api_key="test", cache=False)) as gw:

        def scored(root: bytes) -> Callable[[list[WireSpan]], bool]:
            return lambda spans: any(s.span_id == root.hex() and
                                     sc.RAGAS_EVALUATION_STATUS in s.attributes
                                     for s in spans)

        # What one evaluation costs the judge.
        assert _post(gw, reference.SerializeToString())[0] == 200
        reference_root = next(s for s in reference.resource_spans[0].scope_spans[0].spans
                              if not s.parent_span_id).span_id
        assert downstream.wait_for(scored(reference_root), timeout=30)
        one_run = server.stats().requests
        server.reset_counters()
        # 250 copies with the trace (held together), 250 more once it was scored.
        assert _post(gw, _with_copies(replayed, root_id, 249).SerializeToString())[0] == 200
        assert downstream.wait_for(scored(root_id), timeout=30)
        assert _post(gw, _with_copies(replayed, root_id, 250, keep_others=False)
                     .SerializeToString())[0] == 200
        assert downstream.wait_for(
            lambda spans: sum(s.span_id == root_id.hex() for s in spans) == 500, timeout=30)
        assert gw.forward.force_flush(10_000)
        assert gw.sink is not None and gw.sink.pipeline.scorer.drain(10)
        judge_requests = server.stats().requests
        evaluations = _metric_labels(gw, "ragas_evaluations_total", "status")
        health = gw.health()
    copies = [s for s in downstream.spans() if s.span_id == root_id.hex()]
    assert len(copies) == 500
    assert sum(sc.RAGAS_EVALUATION_STATUS in s.attributes for s in copies) == 1
    evaluation_spans = [s for s in downstream.spans()
                        if s.attributes.get(sc.SPAN_KIND) == sc.KIND_EVALUATOR
                        and s.links[0][1] == root_id.hex()]
    assert len(evaluation_spans) == 1
    assert judge_requests == one_run
    assert sum(evaluations.values()) == 2  # the reference and the replayed root
    assert health["duplicate_roots"] == 499


# --- row 13: invalid UTF-8 costs only its own spans ----------------------------------

def _with_invalid_utf8() -> tuple[bytes, set[str]]:
    """4 spans (2 plain traces): an attribute value of one and the name of another
    hold bytes that are not UTF-8. The body, and the 4 span ids."""
    request = _plain(2)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[0].attributes.add(key="note", value=AnyValue(string_value="MARK-1"))
    spans[2].name = "MARK-2"
    body = request.SerializeToString().replace(b"MARK-1", b"ba\xffd!!").replace(
        b"MARK-2", b"\xc3(oops")
    return body, {s.span_id.hex() for s in spans}


@pytest.mark.parametrize(("judge", "protocol"), [("off", "grpc"), ("off", "http"),
                                                 ("local", "grpc")])
@pytest.mark.parametrize("receiver", ["grpc", "http"])
def test_invalid_utf8_is_repaired_and_the_valid_spans_reach_the_next_hop(
        judge: str, protocol: str, receiver: str) -> None:
    body, ids = _with_invalid_utf8()
    with pytest.raises(DecodeError):
        ExportTraceServiceRequest.FromString(body)  # what a strict next hop does with it
    hop_type = OtlpGrpcReceiver if protocol == "grpc" else OtlpHttpReceiver
    with hop_type() as hop, Gateway(settings(
            forward_endpoint=hop.endpoint, forward_protocol=protocol, judge=judge,
            sample_rate=0.0)) as gw:
        if receiver == "http":
            status, answer = _post(gw, body)
            assert status == 200
            response = ExportTraceServiceResponse.FromString(answer)
        else:
            assert gw.grpc is not None
            with grpc.insecure_channel(gw.grpc.endpoint) as channel:
                response = ExportTraceServiceResponse.FromString(
                    channel.unary_unary(_EXPORT)(body, timeout=5))
        assert hop.wait_for(lambda spans: {s.span_id for s in spans} == ids, timeout=10)
        snap = gw.stats.snapshot()
    assert snap["spans_repaired"] == 2 and snap["spans_dropped"] == {}
    assert response.partial_success.rejected_spans == 0
    assert "2 span(s)" in response.partial_success.error_message
    spans = {s.span_id: s for s in hop.spans()}
    assert len(hop.spans()) == 4
    by_name = {s.name for s in spans.values()}
    assert "\ufffd(oops" in by_name
    assert any(s.attributes.get("note") == "ba\ufffdd!!" for s in spans.values())


def test_a_body_malformed_otherwise_is_still_refused(downstream: OtlpGrpcReceiver) -> None:
    body, _ = _with_invalid_utf8()
    with Gateway(settings(forward_endpoint=downstream.endpoint)) as gw:
        status, answer = _post(gw, body[:-3])  # cut inside the last span
        assert status == 400 and b"malformed protobuf" in answer
        assert gw.stats.snapshot()["spans_repaired"] == 0


def test_unpaired_surrogates_in_otlp_json_are_repaired_too(
        downstream: OtlpGrpcReceiver) -> None:
    request = _plain(2)
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[0].attributes.add(key="note", value=AnyValue(string_value="MARK-1"))
    spans[2].name = "MARK-2"
    ids = {s.span_id.hex() for s in spans}
    data = json_format.MessageToDict(request)
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:  # OTLP/JSON ids are hex
                span[key] = base64.b64decode(span[key]).hex()
    # Valid JSON whose strings are not Unicode: an unpaired surrogate escape.
    body = json.dumps(data).replace("MARK-1", "ba\\ud800d").replace(
        "MARK-2", "\\udc00oops").encode()
    with Gateway(settings(forward_endpoint=downstream.endpoint)) as gw:
        assert gw.http is not None
        host, port = gw.http.server_address[:2]
        conn = http.client.HTTPConnection(str(host), port, timeout=20)
        conn.request("POST", "/v1/traces", body=body,
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = json.loads(response.read())
        conn.close()
        assert response.status == 200
        assert downstream.wait_for(lambda got: {s.span_id for s in got} == ids, timeout=10)
        assert gw.stats.snapshot()["spans_repaired"] == 2
    assert "2 span(s)" in answer["partialSuccess"]["errorMessage"]
    got = downstream.spans()
    assert "\ufffdoops" in {s.name for s in got}
    assert any(s.attributes.get("note") == "ba\ufffdd" for s in got)
