"""Invalid UTF-8 repaired where it is, counted per span."""

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragas_trace.gateway.utf8_repair import repair_utf8
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.rag_traces import plain_request


def _request() -> ExportTraceServiceRequest:
    tracing = InMemoryTracing()
    for i in range(2):
        plain_request(tracing.tracer, i)
    return encode_spans(tracing.spans())


def test_a_bad_resource_string_counts_every_span_under_it() -> None:
    request = _request()
    resource = request.resource_spans[0].resource
    resource.entity_refs.add(type="host", id_keys=["KEY-A", "host.name"])  # repeated string
    body = request.SerializeToString().replace(b"KEY-A", b"k\xe2\x28\xa1y")
    repaired = repair_utf8(body)
    assert repaired is not None
    fixed, count = repaired
    assert count == 4  # every span shares that resource
    assert list(fixed.resource_spans[0].resource.entity_refs[0].id_keys) == \
        ["k\ufffd(\ufffdy", "host.name"]
    # Everything else is as sent.
    assert fixed.resource_spans[0].scope_spans == request.resource_spans[0].scope_spans


def test_a_bad_event_name_deep_in_one_span_counts_that_span_only() -> None:
    request = _request()
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[1].events.add(name="EVENT", time_unix_nano=1)
    body = request.SerializeToString().replace(b"EVENT", b"ev\xffnt")
    repaired = repair_utf8(body)
    assert repaired is not None
    fixed, count = repaired
    assert count == 1
    assert fixed.resource_spans[0].scope_spans[0].spans[1].events[0].name == "ev\ufffdnt"


def test_a_body_that_is_not_protobuf_is_not_repaired() -> None:
    assert repair_utf8(b"\x0a\xff\xff\xff\xff\x0fjunk") is None
