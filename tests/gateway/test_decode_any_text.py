"""The gateway's OTLP decoding takes any body (issue 30): a request, repaired where
its strings are not valid Unicode, or a ``BadRequest`` with an HTTP status; never
another exception. A repaired request holds only valid Unicode."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from any_text import any_text, mojibake_bytes, scaled
from ragas_trace.gateway.decode import BadRequest, parse_request
from ragas_trace.gateway.utf8_repair import _LenientRequest

pytestmark = pytest.mark.usefixtures("no_internal_errors")


def _otlp_json(name: str, value: str, key: str) -> dict[str, object]:
    return {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": key}}]},
        "scopeSpans": [{"spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
            "name": name, "kind": 1, "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": key, "value": {"stringValue": value}}]}]}]}]}


def _valid_unicode(request: ExportTraceServiceRequest) -> None:
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                for text in [span.name, *(a.value.string_value for a in span.attributes)]:
                    text.encode("utf-8")  # UnicodeEncodeError on a lone surrogate


@scaled(30)
@given(name=any_text(max_pieces=4), value=any_text(max_pieces=4),
       key=any_text(max_pieces=2, large=False), ascii_only=st.booleans())
def test_otlp_json_with_any_strings_is_parsed_or_refused(
        name: str, value: str, key: str, ascii_only: bool) -> None:
    body = json.dumps(_otlp_json(name, value, key), ensure_ascii=ascii_only)
    try:
        parsed = parse_request(body.encode("utf-8", "surrogatepass"), "json")
    except BadRequest as exc:
        assert exc.status == 400 and exc.message
        return
    _valid_unicode(parsed.request)


@scaled(30)
@given(name=any_text(max_pieces=4), value=st.binary(max_size=64) | mojibake_bytes())
def test_otlp_protobuf_with_any_bytes_in_its_strings_is_repaired(name: str,
                                                                 value: bytes) -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id = b"\x01" * 16, b"\x02" * 8
    span.name = name.encode("utf-8", "replace").decode("utf-8")
    span.attributes.add(key="input.value").value.string_value = "placeholder"
    # The same message with bytes where strings are: any bytes go onto the wire.
    loose = _LenientRequest.FromString(request.SerializeToString())
    loose.resource_spans[0].scope_spans[0].spans[0].attributes[0].value.string_value = value
    parsed = parse_request(loose.SerializeToString(), "protobuf")
    _valid_unicode(parsed.request)
    got = parsed.request.resource_spans[0].scope_spans[0].spans[0].attributes[0]
    assert got.value.string_value == value.decode("utf-8", "replace")


@scaled(30)
@given(body=st.binary(max_size=200) | mojibake_bytes(), encoding=st.sampled_from(
    ["json", "protobuf"]))
@example(body=b"[" * 100_000, encoding="json")
@example(body=b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
         encoding="json")
def test_any_body_is_a_request_or_a_bad_request(body: bytes, encoding: str) -> None:
    try:
        parse_request(body, encoding)  # type: ignore[arg-type]
    except BadRequest as exc:
        assert exc.status == 400 and exc.message
