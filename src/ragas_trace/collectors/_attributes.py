"""Span attributes shared by every collector, so that LangChain and LlamaIndex
requests look the same downstream. Each builder yields ``(key, value)`` pairs and
is cheap: no JSON work unless there is metadata to encode."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.util.types import AttributeValue

from ragas_trace import semconv as sc
from ragas_trace._internal_errors import record_internal_error

Attribute = tuple[str, AttributeValue]

# The SDK's default span attribute limit is 128; past it attributes are silently
# dropped. Documents are therefore capped, and the true count recorded.
DEFAULT_MAX_DOCUMENTS = 100
RETRIEVAL_DOCUMENTS_TOTAL = "ragas.retrieval.documents_total"


DocumentKeys = tuple[str, str, str, str]
# Writes one passage's content / id / score / metadata under the given keys.
DocumentWriter = Callable[[dict[str, Any], DocumentKeys, Any], None]


class DocumentAttributes:
    """Passage attributes of a retriever span (or, with ``prefix``, a reranker's output),
    written into its attribute dict with keys built once per index (this runs for every
    passage of every request). The
    framework's ``write`` reads one passage; one that fails loses only its own
    attributes, counted under ``where``."""

    def __init__(self, write: DocumentWriter, where: str, max_documents: int,
                 budget: int | None, prefix: str = sc.RETRIEVAL_DOCUMENTS) -> None:
        self._write = write
        self._where = where
        self._keys: list[DocumentKeys] = [
            (sc.document_key(i, sc.DOCUMENT_CONTENT, prefix),
             sc.document_key(i, sc.DOCUMENT_ID, prefix),
             sc.document_key(i, sc.DOCUMENT_SCORE, prefix),
             sc.document_key(i, sc.DOCUMENT_METADATA, prefix))
            for i in range(max_documents)]
        self._budget = budget

    def add(self, attrs: dict[str, Any], documents: Any) -> None:
        docs: Sequence[Any]
        if type(documents) is list or isinstance(documents, Sequence):
            docs = documents
        else:
            try:
                docs = list(documents or ())
            except TypeError:
                docs = ()
        attrs[RETRIEVAL_DOCUMENTS_TOTAL] = len(docs)
        left = self._budget
        for keys, doc in zip(self._keys, docs, strict=False):
            if left is not None:
                # Past the span attribute limit the SDK drops the OLDEST attributes
                # (the span kind first), so stop before reaching it.
                left -= 4
                if left < 0:
                    break
            try:
                self._write(attrs, keys, doc)
            except Exception as exc:
                record_internal_error(self._where, exc)
                attrs[keys[0]] = ""

    def __call__(self, documents: Any) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        self.add(attrs, documents)
        return attrs


def as_text(value: Any) -> str | None:
    """Text for an attribute: str as is, bytes decoded leniently, else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return None


def chain_attributes(name: str | None, framework: str, app_name: str | None) -> Iterator[Attribute]:
    """A root's kind, framework and ``ragas.app.name``: only the name the app chose
    (``name``, a run or engine name, stays the span's name: as a metric label it
    could take a value per request)."""
    yield sc.SPAN_KIND, sc.KIND_CHAIN
    yield sc.RAGAS_FRAMEWORK, framework
    if app_name:
        yield sc.RAGAS_APP_NAME, app_name


def input_attributes(question: str | None) -> Iterator[Attribute]:
    if question is not None:
        yield sc.INPUT_VALUE, question
        yield sc.INPUT_MIME_TYPE, sc.MIME_TEXT


def output_attributes(answer: str | None) -> Iterator[Attribute]:
    if answer is not None:
        yield sc.OUTPUT_VALUE, answer
        yield sc.OUTPUT_MIME_TYPE, sc.MIME_TEXT


def retriever_attributes() -> Iterator[Attribute]:
    yield sc.SPAN_KIND, sc.KIND_RETRIEVER
    yield sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_OPERATION_RETRIEVAL


def reranker_attributes() -> Iterator[Attribute]:
    yield sc.SPAN_KIND, sc.KIND_RERANKER


def document_attributes(
    index: int,
    content: str | None,
    doc_id: Any = None,
    score: Any = None,
    metadata: Mapping[str, Any] | None = None,
) -> Iterator[Attribute]:
    yield sc.document_key(index, sc.DOCUMENT_CONTENT), content if content is not None else ""
    if doc_id is not None:
        yield sc.document_key(index, sc.DOCUMENT_ID), str(doc_id)
    if isinstance(score, int | float) and not isinstance(score, bool):
        yield sc.document_key(index, sc.DOCUMENT_SCORE), float(score)
    if metadata:
        yield sc.document_key(index, sc.DOCUMENT_METADATA), metadata_json(metadata)


_METADATA_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)
_json_str = json.encoder.encode_basestring  # the C implementation when available
_INFINITIES = (float("inf"), float("-inf"))


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """``json.dumps(metadata, default=str, ensure_ascii=False)``, about 3x faster for the
    usual flat mapping of str keys to str/int/float values (it runs per passage, on
    the request path); anything else goes through the full encoder."""
    parts = []
    for key, value in metadata.items():
        kind = type(value)
        if type(key) is not str:
            return _METADATA_ENCODER.encode(metadata)
        if kind is str:
            parts.append(f"{_json_str(key)}: {_json_str(value)}")
        elif kind is int or (kind is float and value == value and value not in _INFINITIES):
            parts.append(f"{_json_str(key)}: {value!r}")
        else:
            return _METADATA_ENCODER.encode(metadata)
    return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message as recorded on an LLM span: ``tool_calls`` are
    ``(id, function name, JSON arguments)``."""

    role: str
    content: str | None
    tool_calls: tuple[tuple[str | None, str, str | None], ...] = ()


@functools.lru_cache(maxsize=256)
def _message_keys(direction: str, index: int) -> tuple[str, str]:
    # Built once: these run for every message of every model call.
    return (sc.message_key(direction, index, sc.MESSAGE_ROLE),
            sc.message_key(direction, index, sc.MESSAGE_CONTENT))


@functools.lru_cache(maxsize=256)
def _tool_call_keys(direction: str, index: int, call: int) -> tuple[str, str, str]:
    return (sc.tool_call_key(direction, index, call, sc.TOOL_CALL_ID),
            sc.tool_call_key(direction, index, call, sc.TOOL_CALL_FUNCTION_NAME),
            sc.tool_call_key(direction, index, call, sc.TOOL_CALL_FUNCTION_ARGUMENTS))


def add_message(attrs: dict[str, Any], direction: str, index: int, role: str,
                content: str | None,
                tool_calls: Sequence[tuple[str | None, str, str | None]] = ()) -> None:
    """Write one message's OpenInference attributes (see ``message_attributes``) into
    ``attrs``; for collectors that read messages without making ``Message`` objects."""
    role_key, content_key = _message_keys(direction, index)
    attrs[role_key] = role
    if content is not None:
        attrs[content_key] = content
    for j, (call_id, name, arguments) in enumerate(tool_calls):
        id_key, name_key, arguments_key = _tool_call_keys(direction, index, j)
        if call_id:
            attrs[id_key] = call_id
        attrs[name_key] = name
        if arguments is not None:
            attrs[arguments_key] = arguments


def message_attributes(direction: str, messages: Sequence[Message],
                       max_messages: int = 64) -> Iterator[Attribute]:
    """OpenInference ``llm.input_messages.*`` (``direction="input"``) or
    ``llm.output_messages.*``: role, content and tool calls of each message; at most
    ``max_messages`` (the latest ones), as the span attribute limit is 128 by default."""
    attrs: dict[str, Any] = {}
    start = max(0, len(messages) - max_messages)
    for i, message in enumerate(messages[start:]):
        add_message(attrs, direction, i, message.role, message.content, message.tool_calls)
    return iter(attrs.items())


def tool_attributes(name: str, description: str | None = None,
                    call_id: str | None = None) -> Iterator[Attribute]:
    """A TOOL span's start attributes, OpenInference and GenAI spelling (its input and
    output go in ``input.value`` / ``output.value``)."""
    yield sc.SPAN_KIND, sc.KIND_TOOL
    yield sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_OPERATION_EXECUTE_TOOL
    yield sc.TOOL_NAME, name
    yield sc.GEN_AI_TOOL_NAME, name
    if description:
        yield sc.TOOL_DESCRIPTION, description
    if call_id:
        yield sc.GEN_AI_TOOL_CALL_ID, call_id


def session_attributes(session_id: str | None) -> Iterator[Attribute]:
    """OpenInference ``session.id`` and GenAI ``gen_ai.conversation.id``."""
    if session_id:
        yield sc.SESSION_ID, session_id
        yield sc.GEN_AI_CONVERSATION_ID, session_id


def documents_total(count: int) -> Iterator[Attribute]:
    yield RETRIEVAL_DOCUMENTS_TOTAL, count


def llm_attributes(
    model: str | None,
    provider: str | None,
    prompt_tokens: int | None,
    completion_tokens: int | None,
    total_tokens: int | None = None,
) -> Iterator[Attribute]:
    """Model and usage in both OpenInference and OTel GenAI spelling."""
    yield sc.SPAN_KIND, sc.KIND_LLM
    yield sc.GEN_AI_OPERATION_NAME, sc.GEN_AI_OPERATION_CHAT
    if model:
        yield sc.LLM_MODEL_NAME, model
        yield sc.GEN_AI_REQUEST_MODEL, model
    if provider:
        yield sc.LLM_PROVIDER, provider
        yield sc.GEN_AI_PROVIDER_NAME, provider
    yield from usage_attributes(prompt_tokens, completion_tokens, total_tokens)


def usage_attributes(
    prompt_tokens: int | None, completion_tokens: int | None, total_tokens: int | None = None
) -> Iterator[Attribute]:
    """Token usage in both spellings, for an LLM span whose usage arrives at its end."""
    if prompt_tokens is not None:
        yield sc.LLM_TOKEN_COUNT_PROMPT, prompt_tokens
        yield sc.GEN_AI_USAGE_INPUT_TOKENS, prompt_tokens
    if completion_tokens is not None:
        yield sc.LLM_TOKEN_COUNT_COMPLETION, completion_tokens
        yield sc.GEN_AI_USAGE_OUTPUT_TOKENS, completion_tokens
    if total_tokens is None and prompt_tokens is not None and completion_tokens is not None:
        total_tokens = prompt_tokens + completion_tokens
    if total_tokens is not None:
        yield sc.LLM_TOKEN_COUNT_TOTAL, total_tokens
