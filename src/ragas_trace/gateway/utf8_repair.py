"""OTLP requests whose strings are not all valid Unicode, repaired span by span.

Protobuf (proto3) requires ``string`` fields to be UTF-8, and parsers enforce it for
the whole message: one bad attribute value makes the next hop refuse every span of
the request. When the strict parse fails, the request is parsed again with a mirror
of the OTLP messages whose ``string`` fields are ``bytes`` (same wire format, no
check); each span, resource and scope that the strict parser would refuse has its
invalid bytes replaced with U+FFFD, and the repaired request is parsed strictly.
OTLP/JSON has the same fault as an unpaired surrogate escape (``"\\ud800"``): valid
JSON, refused by the protobuf conversion. Only requests that need it pay for this."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragas_trace._surrogates import without_surrogates

_STRING = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
_BYTES = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES


def _files(file: FileDescriptor, seen: dict[str, FileDescriptor]) -> dict[str, FileDescriptor]:
    """``file`` and its dependencies, dependencies first."""
    for dependency in file.dependencies:
        _files(dependency, seen)
    seen.setdefault(file.name, file)
    return seen


def _loosen(message: descriptor_pb2.DescriptorProto, scope: str,
            strings: set[tuple[str, str]]) -> None:
    name = f"{scope}.{message.name}"
    for field in message.field:
        if field.type == _STRING:
            field.type = _BYTES
            strings.add((name, field.name))
    for nested in message.nested_type:
        _loosen(nested, name, strings)


def _lenient_request_class() -> tuple[Any, frozenset[tuple[str, str]]]:
    """``ExportTraceServiceRequest`` with every string as bytes (its own pool, same
    names), and the (message, field) pairs that were strings."""
    pool = descriptor_pool.DescriptorPool()
    strings: set[tuple[str, str]] = set()
    for file in _files(ExportTraceServiceRequest.DESCRIPTOR.file, {}).values():
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        for message in proto.message_type:
            _loosen(message, proto.package, strings)
        pool.Add(proto)
    descriptor = pool.FindMessageTypeByName(ExportTraceServiceRequest.DESCRIPTOR.full_name)
    return message_factory.GetMessageClass(descriptor), frozenset(strings)


_LenientRequest, _STRINGS = _lenient_request_class()


def repair_utf8(body: bytes) -> tuple[ExportTraceServiceRequest, int] | None:
    """The request in ``body`` with invalid UTF-8 replaced, and how many spans were
    repaired (a span counts if it, its resource or its scope had any); None if
    ``body`` is malformed for another reason."""
    try:
        loose = _LenientRequest.FromString(body)
    except (DecodeError, RuntimeError, ValueError):
        return None
    repaired = 0
    for rs in loose.resource_spans:
        origin = _repair(rs.resource) | _repair_string(rs, _field(rs, "schema_url"))
        for ss in rs.scope_spans:
            scope = _repair(ss.scope) | _repair_string(ss, _field(ss, "schema_url"))
            for span in ss.spans:
                if _repair(span) or origin or scope:
                    repaired += 1
    try:
        return ExportTraceServiceRequest.FromString(loose.SerializeToString()), repaired
    except DecodeError:
        return None


def _repair(message: Message) -> bool:
    """Repair ``message`` if the strict parser refuses it; whether anything changed.
    Each part is checked by the strict parser (in C) before it is walked (in Python),
    so only the parts holding invalid UTF-8 are walked."""
    try:
        _strict_class(message.DESCRIPTOR.full_name).FromString(message.SerializeToString())
        return False
    except DecodeError:
        pass
    changed = False
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            for item in value if field.is_repeated else (value,):
                changed |= _repair(item)
        else:
            changed |= _repair_string(message, field)
    return changed


_STRICT: dict[str, type[Message]] = {}


def _strict_class(full_name: str) -> type[Message]:
    """The OTLP message class (default pool) of a lenient message's type."""
    cls = _STRICT.get(full_name)
    if cls is None:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(full_name)
        cls = _STRICT[full_name] = message_factory.GetMessageClass(descriptor)
    return cls


def _field(message: Message, name: str) -> FieldDescriptor:
    field: FieldDescriptor = message.DESCRIPTOR.fields_by_name[name]
    return field


def _repair_string(message: Message, field: FieldDescriptor) -> bool:
    """Replace invalid UTF-8 in ``field`` if it was a string; whether it had any."""
    if (message.DESCRIPTOR.full_name, field.name) not in _STRINGS:
        return False
    value = getattr(message, field.name)
    if not field.is_repeated:
        fixed = _valid(value)
        if fixed is value:
            return False
        setattr(message, field.name, fixed)
        return True
    items = list(value)
    fixed_items = [_valid(item) for item in items]
    if all(a is b for a, b in zip(items, fixed_items, strict=True)):
        return False
    del value[:]
    value.extend(fixed_items)
    return True


def _valid(data: bytes) -> bytes:
    try:
        data.decode("utf-8")
        return data
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8")


_RESOURCE_SPANS = ("resourceSpans", "resource_spans")
_SCOPE_SPANS = ("scopeSpans", "scope_spans")
_SPANS = ("spans",)


def repair_json_surrogates(data: dict[str, Any]) -> int:
    """Replace unpaired surrogates (``json.loads`` keeps them) with U+FFFD in a parsed
    OTLP/JSON request, in place; how many spans had any (or their resource or scope).
    Raises ``RecursionError`` for nesting too deep to walk."""
    repaired = 0
    for rs in _children(data, _RESOURCE_SPANS):
        origin = _repair_json(rs, skip=_SCOPE_SPANS)
        for ss in _children(rs, _SCOPE_SPANS):
            scope = _repair_json(ss, skip=_SPANS)
            for span in _children(ss, _SPANS):
                if _repair_json(span) or origin or scope:
                    repaired += 1
    return repaired


def _children(node: dict[str, Any], keys: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    for key in keys:
        items = node.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))


def _repair_json(node: dict[str, Any] | list[Any], skip: tuple[str, ...] = ()) -> bool:
    changed = False
    entries = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in list(entries):
        if isinstance(value, str):
            fixed = without_surrogates(value)
            if fixed is not value:
                node[key] = fixed  # type: ignore[index,call-overload]
                changed = True
        elif isinstance(value, dict | list) and key not in skip:
            changed |= _repair_json(value)
    return changed
