from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, StatusCode

from ragas_trace import semconv as sc
from ragas_trace.extract import extract_record
from ragas_trace.gateway.convert import Limits, ReceivedSpan, convert_request
from ragas_trace.gateway.downstream import encode_batch


def _spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app", "n": 3}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("scope.a", "1.2", schema_url="https://schema/1")
    with tracer.start_as_current_span("root", kind=SpanKind.SERVER, attributes={
            sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: "Who?",
            sc.OUTPUT_VALUE: "Ada.", "tags": ("a", "b"), "n": 1.5}) as root:
        with tracer.start_as_current_span("retrieve", attributes={
                sc.SPAN_KIND: sc.KIND_RETRIEVER,
                sc.document_key(0, sc.DOCUMENT_CONTENT): "Ada wrote it.",
                sc.document_key(0, sc.DOCUMENT_SCORE): 0.9}) as child:
            child.add_event("found", {"count": 1})
            child.add_link(root.get_span_context(), {"why": "test"})
        root.set_status(StatusCode.ERROR, "boom")
    provider.shutdown()
    return exporter.get_finished_spans()


def test_round_trip_keeps_everything_the_encoder_writes():
    original = encode_spans(_spans())
    converted = convert_request(original, Limits())
    assert converted.rejected == 0
    assert len(converted.spans) == 2
    again = encode_spans(converted.spans)
    assert again == original


def test_converted_spans_feed_the_extractor():
    converted = convert_request(encode_spans(_spans()), Limits())
    record = extract_record(converted.spans)
    assert record is not None
    assert record.question == "Who?"
    assert record.answer == "Ada."
    assert record.context_texts == ["Ada wrote it."]
    root = next(s for s in converted.spans if s.name == "root")
    assert root.resource.attributes["service.name"] == "rag-app"
    assert root.instrumentation_scope is not None
    assert (root.instrumentation_scope.name, root.instrumentation_scope.version) == \
        ("scope.a", "1.2")
    assert root.kind is SpanKind.SERVER
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == "boom"
    assert root.attributes["tags"] == ("a", "b")


def test_fast_path_encoding_equals_the_sdk_encoding():
    original = encode_spans(_spans())
    spans = convert_request(original, Limits()).spans
    assert all(isinstance(s, ReceivedSpan) for s in spans)
    assert encode_batch(spans) == original


def test_spans_breaking_limits_are_rejected_one_by_one():
    request = encode_spans(_spans())
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.CopyFrom(request.resource_spans[0].scope_spans[0].spans[0])
    bad.span_id = b"\x01" * 8
    for i in range(20):
        kv = bad.attributes.add()
        kv.key = f"k{i}"
        kv.value.int_value = i
    short_id = request.resource_spans[0].scope_spans[0].spans.add()
    short_id.trace_id = b"\x01" * 15
    short_id.span_id = b"\x02" * 8
    converted = convert_request(request, Limits(max_attributes=10))
    assert converted.rejected == 2
    assert "attributes" in converted.reason
    assert len(converted.spans) == 2


def test_deeply_nested_values_are_left_out():
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = b"\x01" * 16, b"\x02" * 8
    value = span.attributes.add()
    value.key = "deep"
    node = value.value
    for _ in range(20):
        node = node.array_value.values.add()
    node.string_value = "x"
    value = span.attributes.add()
    value.key = "flat"
    value.value.int_value = 1
    converted = convert_request(request, Limits())
    assert converted.rejected == 0
    assert dict(converted.spans[0].attributes or {}) == {"flat": 1}


def test_links_and_remote_parents_survive():
    spans = _spans()
    converted = convert_request(encode_spans(spans), Limits()).spans
    child = next(s for s in converted if s.name == "retrieve")
    root = next(s for s in converted if s.name == "root")
    assert child.parent is not None
    assert child.parent.span_id == root.context.span_id
    assert isinstance(child.links[0], Link)
    assert child.links[0].context.span_id == root.context.span_id
    assert child.links[0].attributes["why"] == "test"
    assert child.events[0].name == "found"
