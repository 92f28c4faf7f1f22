"""OTLP/HTTP request bodies -> ``ExportTraceServiceRequest``, and responses back.

Every way a body can be wrong (content type, encoding, size after decompression,
protobuf or JSON syntax) becomes a ``BadRequest`` carrying the HTTP status the OTLP
spec asks for; nothing here raises anything else on hostile input."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any, Literal, NamedTuple

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragas_trace.gateway.utf8_repair import repair_json_surrogates, repair_utf8

Encoding = Literal["protobuf", "json"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_KEYS = frozenset({"traceId", "trace_id", "spanId", "span_id", "parentSpanId",
                      "parent_span_id"})
_CONTAINERS = ("resourceSpans", "resource_spans", "scopeSpans", "scope_spans", "spans",
               "links")


class BadRequest(Exception):
    """A request the gateway refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def encoding_of(content_type: str | None) -> Encoding:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == PROTOBUF:
        return "protobuf"
    if media == JSON:
        return "json"
    raise BadRequest(415, f"unsupported Content-Type {media or '(none)'!r}: "
                          f"use {PROTOBUF} or {JSON}")


def decompress(body: bytes, content_encoding: str | None, max_bytes: int) -> bytes:
    """The body as sent, gunzipped if needed, never more than ``max_bytes`` of output
    (a gzip bomb stops at the limit instead of filling memory)."""
    encoding = (content_encoding or "identity").strip().lower()
    if encoding == "identity":
        return body
    if encoding != "gzip":
        raise BadRequest(415, f"unsupported Content-Encoding {encoding!r}: use gzip or none")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise BadRequest(400, f"invalid gzip body: {exc}") from None
    if len(out) > max_bytes or inflater.unconsumed_tail:
        raise BadRequest(413, f"request larger than {max_bytes} bytes once decompressed")
    if not inflater.eof:
        raise BadRequest(400, "truncated gzip body")
    return out


class Parsed(NamedTuple):
    request: ExportTraceServiceRequest
    repaired: int = 0  # spans whose invalid UTF-8 was replaced (``utf8_repair``)


def parse_request(body: bytes, encoding: Encoding) -> Parsed:
    """The request in ``body``. Strings that are not valid Unicode (invalid UTF-8 in
    protobuf, unpaired surrogate escapes in JSON) are repaired with U+FFFD, not
    refused: the valid spans must not be lost with the bad ones. A JSON body must be
    UTF-8 text as a whole (RFC 8259)."""
    return _parse_protobuf(body) if encoding == "protobuf" else _parse_json(body)


def _parse_protobuf(body: bytes) -> Parsed:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
        return Parsed(request)
    except (DecodeError, RuntimeError, ValueError) as exc:
        error = exc
    repaired = repair_utf8(body)
    if repaired is None:
        raise BadRequest(400, f"malformed protobuf: {error}")
    return Parsed(*repaired)


def _parse_json(body: bytes) -> Parsed:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(400, f"malformed JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest(400, "an OTLP/JSON body must be a JSON object")
    try:
        _hex_ids_to_base64(data)
        return Parsed(_from_dict(data))
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        error = exc
    try:
        repaired = repair_json_surrogates(data)
        if repaired:
            return Parsed(_from_dict(data), repaired)
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        error = exc
    raise BadRequest(400, f"invalid OTLP/JSON: {error}")


def _from_dict(data: dict[str, Any]) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request, ignore_unknown_fields=True)
    return request


def encode(message: Message, encoding: Encoding) -> bytes:
    if encoding == "json":
        text: str = json_format.MessageToJson(message, indent=None)
        return text.encode()
    data: bytes = message.SerializeToString()
    return data


def status_body(code: int, message: str, encoding: Encoding) -> bytes:
    """A ``google.rpc.Status``: the body OTLP/HTTP sends with an error status."""
    return encode(status_pb2.Status(code=code, message=message), encoding)


def _hex_ids_to_base64(node: Any) -> None:
    """OTLP/JSON spells ids as hex; protobuf's JSON mapping of ``bytes`` is base64."""
    if isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in _ID_KEYS and isinstance(value, str):
            try:
                node[key] = base64.b64encode(bytes.fromhex(value)).decode()
            except ValueError:
                raise BadRequest(400, f"{key} must be hex, got {value[:40]!r}") from None
        elif key in _CONTAINERS:
            _hex_ids_to_base64(value)

