"""Question, answer, passages, model and token usage read from the objects LangChain
hands to callbacks. Each reader accepts anything and returns ``None`` (or nothing)
for shapes it does not know: a chain's odd input must never cost the user a trace."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from uuid import UUID

from langchain_core.documents import Document
from pydantic import BaseModel

from ragas_trace.collectors._attributes import DocumentKeys, as_text, metadata_json
from ragas_trace.collectors.langchain import _messages

QUESTION_KEYS = ("question", "input", "query", "query_str", "user_input", "message", "prompt")
# ``generation``: the LangGraph corrective / self-RAG tutorials' state key.
ANSWER_KEYS = ("answer", "output", "result", "response", "generation", "final_answer", "text",
               "content")
# Vector stores put a similarity score in metadata under one of these names.
_SCORE_KEYS = ("score", "relevance_score", "similarity_score", "_score")
# Below, ``type(x) is dict or isinstance(x, Mapping)``: the ABC check is slow, and
# these run for every passage of every request.
_MAX_DEPTH = 3
_JSON = json.JSONEncoder(default=str, ensure_ascii=False)


def is_stream_placeholder(inputs: Any) -> bool:
    """``stream``/``astream`` start the root run with ``{"input": ""}``; the real input
    arrives with ``on_chain_end(inputs=...)``."""
    return type(inputs) is dict and len(inputs) == 1 and inputs.get("input") == ""


def question_of(inputs: Any) -> str | None:
    """A str input, the usual keys of a dict input, or the latest user message of a
    ``{"messages": [...]}`` (agent / graph state) or message-list input."""
    return _text_of(inputs, QUESTION_KEYS, _messages.latest_user_text, 0)


def answer_of(outputs: Any) -> str | None:
    """A str output, the usual keys of a dict output or pydantic model (a
    ``with_structured_output`` answer), or the final assistant text of a
    ``{"messages": [...]}`` state (never a tool-call message), else an agent's
    ``structured_response`` (``create_agent(response_format=...)``): its answer key,
    else the whole of it as JSON (a structured answer has no other text). An
    ``include_raw=True`` structured output reads its ``parsed``, else its ``raw``."""
    if type(outputs) is dict and "parsed" in outputs and "raw" in outputs:
        return _include_raw_answer(outputs)
    found = _text_of(outputs, ANSWER_KEYS, _messages.final_answer, 0)
    if found is not None:
        return found
    if type(outputs) is dict and "structured_response" in outputs:
        outputs = outputs["structured_response"]
        found = _text_of(outputs, ANSWER_KEYS, _messages.final_answer, 0)
        return found if found is not None else _structured(outputs)
    return _structured(outputs) if isinstance(outputs, BaseModel) else None


def _include_raw_answer(outputs: dict[str, Any]) -> str | None:
    """``with_structured_output(..., include_raw=True)``'s ``{"raw", "parsed",
    "parsing_error"}``: ``parsed`` as any structured answer; when nothing was parsed,
    the text the model wrote, else the arguments of its first tool call (what it
    answered, in a shape the schema refused)."""
    parsed = outputs["parsed"]
    if parsed is not None:
        found = _text_of(parsed, ANSWER_KEYS, _messages.final_answer, 0)
        return found if found is not None else _structured(parsed)
    raw = outputs["raw"]
    text = _messages.content_text(getattr(raw, "content", None))
    if text:
        return text
    calls = getattr(raw, "tool_calls", None)
    if type(calls) is list and calls and isinstance(calls[0], Mapping):
        args = calls[0].get("args")
        found = _text_of(args, ANSWER_KEYS, _messages.final_answer, 0)
        return found if found is not None else _structured(args)
    return None


def _structured(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)  # a pydantic model
    if callable(dump):
        text = dump()
        return text if isinstance(text, str) else None
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return None


def _text_of(value: Any, keys: Sequence[str], from_messages: Callable[[Any], str | None],
             depth: int) -> str | None:
    if type(value) is str:
        return value
    if isinstance(value, str):
        # StrOutputParser returns a str subclass; exporters want the plain type.
        return str.__str__(value)
    if value is None or depth > _MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        for key in keys:
            if key in value:
                return _text_of(value[key], keys, from_messages, depth + 1)
        if "messages" in value:
            return from_messages(value["messages"])
        return None
    content = getattr(value, "content", None)
    if content is not None:
        return _messages.content_text(content)
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        for key in keys:
            if key in fields:
                return _text_of(getattr(value, key), keys, from_messages, depth + 1)
        return None
    text = as_text(value)
    if text is not None:
        return text
    if isinstance(value, list) and value:
        found = from_messages(value)
        if found is None and isinstance(value[-1], str | bytes):
            return _text_of(value[-1], keys, from_messages, depth + 1)
        return found
    return None


def write_document(attrs: dict[str, Any], keys: DocumentKeys, doc: Any) -> None:
    """A ``Document``, a str or bytes, or a mapping with ``page_content``/``content``."""
    if type(doc) is Document or isinstance(doc, Document):
        content: Any = doc.page_content
        metadata: Any = doc.metadata
        doc_id: Any = doc.id
    elif isinstance(doc, Mapping):
        content = doc.get("page_content", doc.get("content", doc.get("text")))
        metadata = doc.get("metadata")
        doc_id = doc.get("id")
    else:
        content, metadata, doc_id = doc, None, None
    text = content if type(content) is str else as_text(content)
    attrs[keys[0]] = text if text is not None else ""
    if metadata and (type(metadata) is dict or isinstance(metadata, Mapping)):
        if doc_id is None:
            doc_id = metadata.get("id")
        for key in _SCORE_KEYS:
            if key in metadata:
                score = metadata[key]
                if isinstance(score, int | float) and not isinstance(score, bool):
                    attrs[keys[2]] = float(score)
                break
        attrs[keys[3]] = metadata_json(metadata)
    if doc_id is not None:
        attrs[keys[1]] = doc_id if type(doc_id) is str else str(doc_id)


def model_of(metadata: Mapping[str, Any] | None,
             invocation: Mapping[str, Any] | None) -> str | None:
    """The model name LangChain reports at start (``ls_model_name``), else the call's params."""
    if metadata:
        name = metadata.get("ls_model_name")
        if isinstance(name, str) and name:
            return name
    if invocation:
        for key in ("model", "model_name", "model_id"):
            name = invocation.get(key)
            if isinstance(name, str) and name:
                return name
    return None


def provider_of(metadata: Mapping[str, Any] | None) -> str | None:
    if metadata:
        provider = metadata.get("ls_provider")
        if isinstance(provider, str) and provider:
            return provider
    return None


def usage_of(response: Any, message: Any) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, total) tokens: the completion ``message``'s
    ``usage_metadata``, else the provider's ``llm_output["token_usage"]``."""
    usage: Any = getattr(message, "usage_metadata", None) if message is not None else None
    if type(usage) is dict or isinstance(usage, Mapping):
        return (_int(usage.get("input_tokens")), _int(usage.get("output_tokens")),
                _int(usage.get("total_tokens")))
    llm_output = getattr(response, "llm_output", None)
    if isinstance(llm_output, Mapping):
        usage = llm_output.get("token_usage") or llm_output.get("usage")
        if isinstance(usage, Mapping):
            return (_int(usage.get("prompt_tokens", usage.get("input_tokens"))),
                    _int(usage.get("completion_tokens", usage.get("output_tokens"))),
                    _int(usage.get("total_tokens")))
    return None, None, None


def response_model_of(response: Any) -> str | None:
    llm_output = getattr(response, "llm_output", None)
    if isinstance(llm_output, Mapping):
        name = llm_output.get("model_name", llm_output.get("model"))
        if isinstance(name, str) and name:
            return name
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# LangGraph copies ``configurable.thread_id`` into the run's metadata; the other two
# are the keys LangSmith groups conversations by.
_SESSION_KEYS = ("thread_id", "session_id", "conversation_id")


def session_of(metadata: Mapping[str, Any]) -> str | None:
    """The conversation a request belongs to, from its root run's metadata."""
    for key in _SESSION_KEYS:
        value = metadata.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int | UUID) and not isinstance(value, bool):
            return str(value)
    return None
