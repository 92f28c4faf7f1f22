import gzip
import json

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragas_trace.gateway.decode import BadRequest, decompress, encoding_of, parse_request


def _request() -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
    span.span_id = bytes.fromhex("b7ad6b7169203331")
    span.parent_span_id = bytes.fromhex("00f067aa0ba902b7")
    span.name = "q"
    link = span.links.add()
    link.trace_id = span.trace_id
    link.span_id = span.parent_span_id
    return request


def test_content_types():
    assert encoding_of("application/x-protobuf") == "protobuf"
    assert encoding_of("application/json; charset=utf-8") == "json"
    with pytest.raises(BadRequest) as err:
        encoding_of("text/plain")
    assert err.value.status == 415


def test_otlp_json_hex_ids_are_read_as_hex():
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
        "parentSpanId": "00f067aa0ba902b7", "name": "q", "kind": 2, "unknownField": 1,
        "links": [{"traceId": "0af7651916cd43dd8448eb211c80319c",
                   "spanId": "00f067aa0ba902b7"}]}]}]}]}).encode()
    parsed, repaired = parse_request(body, "json")
    expected = _request()
    expected.resource_spans[0].scope_spans[0].spans[0].kind = 2
    assert parsed == expected and repaired == 0


def test_json_that_is_not_otlp_is_a_400():
    for body in (b"{", b"[1]", b'{"resourceSpans": 3}', b'{"resourceSpans": [{"scopeSpans":'
                 b' [{"spans": [{"traceId": "zz"}]}]}]}', b"[" * 100_000):
        with pytest.raises(BadRequest) as err:
            parse_request(body, "json")
        assert err.value.status == 400


def test_malformed_protobuf_is_a_400():
    with pytest.raises(BadRequest) as err:
        parse_request(b"\x0a\xff\xff\xff\xff\x0f garbage", "protobuf")
    assert err.value.status == 400


def test_gzip_round_trip_and_bomb():
    data = _request().SerializeToString()
    assert decompress(gzip.compress(data), "gzip", 1 << 20) == data
    bomb = gzip.compress(b"\0" * (50 << 20))
    assert len(bomb) < 100_000
    with pytest.raises(BadRequest) as err:
        decompress(bomb, "gzip", 1 << 20)
    assert err.value.status == 413


def test_bad_or_truncated_gzip_and_unknown_encoding():
    with pytest.raises(BadRequest) as err:
        decompress(b"not gzip", "gzip", 1000)
    assert err.value.status == 400
    with pytest.raises(BadRequest) as err:
        decompress(gzip.compress(b"x" * 500)[:-10], "gzip", 1000)
    assert err.value.status == 400
    with pytest.raises(BadRequest) as err:
        decompress(b"x", "br", 1000)
    assert err.value.status == 415


def test_json_responses_use_protobuf_json_mapping():
    text = json_format.MessageToJson(_request())
    assert "traceId" in text
