"""Question, answer, passages, model and token usage read from the objects the
LlamaIndex dispatcher hands to span handlers. Each reader accepts anything and
returns ``None`` (or nothing) for shapes it does not know."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.schema import MetadataMode, TextNode
from pydantic import BaseModel

from ragas_trace.collectors._attributes import (
    DocumentKeys,
    as_text,
    metadata_json,
)

_QUESTION_ARGS = ("str_or_query_bundle", "message", "query", "query_str")
_PROMPT_TOKEN_KEYS = ("prompt_tokens", "input_tokens")
_COMPLETION_TOKEN_KEYS = ("completion_tokens", "output_tokens")


def question_of(bound_args: inspect.BoundArguments) -> str | None:
    """The user's text: a query engine's ``str_or_query_bundle``, a chat engine's ``message``."""
    arguments = bound_args.arguments
    for name in _QUESTION_ARGS:
        if name in arguments:
            return _text(arguments[name])
    return None


def _text(value: Any) -> str | None:
    if type(value) is str:
        return value
    query_str = getattr(value, "query_str", None)  # QueryBundle
    if isinstance(query_str, str):
        return query_str
    content = getattr(value, "content", None)  # ChatMessage
    if isinstance(content, str):
        return content
    return as_text(value)


# Where a workflow's result, a stop event or a structured output (a pydantic model
# the app defined) keeps its answer.
ANSWER_KEYS = ("answer", "response", "output", "result", "text", "content")


def answer_of(result: Any) -> str | None:
    """The text of a finished ``Response`` / ``AgentChatResponse`` (``response`` field),
    or of a ``PydanticResponse`` (an ``output_cls`` query engine's model)."""
    if result is None:
        return None
    text = getattr(result, "response", None)
    if isinstance(text, str):
        return text
    if isinstance(text, BaseModel):
        return structured_answer(text)
    return as_text(result)


def structured_answer(model: BaseModel) -> str | None:
    """A structured output's answer field (what the user reads), else the whole model
    as JSON (what Phoenix shows for it)."""
    fields = type(model).model_fields
    for key in ANSWER_KEYS:
        if key in fields:
            value = getattr(model, key, None)
            if isinstance(value, str):
                return value
    try:
        return model.model_dump_json()
    except (TypeError, ValueError):
        return None


def write_document(attrs: dict[str, Any], keys: DocumentKeys, item: Any) -> None:
    """A retrieved ``NodeWithScore`` (or a bare node), or a tool's text output."""
    node = getattr(item, "node", item)
    if type(node) is TextNode:
        # What get_content(MetadataMode.NONE) returns, without building the metadata
        # string it then ignores.
        content: Any = node.text
    elif isinstance(node, str):
        attrs[keys[0]] = node
        return
    else:
        content = node.get_content(metadata_mode=MetadataMode.NONE)
    text = content if type(content) is str else as_text(content)
    attrs[keys[0]] = text if text is not None else ""
    doc_id = getattr(node, "node_id", None)
    if doc_id is not None:
        attrs[keys[1]] = doc_id if type(doc_id) is str else str(doc_id)
    score = getattr(item, "score", None)
    if type(score) is float or (isinstance(score, int) and not isinstance(score, bool)):
        attrs[keys[2]] = float(score)
    metadata = getattr(node, "metadata", None)
    if metadata and isinstance(metadata, Mapping):
        attrs[keys[3]] = metadata_json(metadata)


# LLM classes -> the attribute naming their model ("" when none does). Looked up once
# per class: on a pydantic model a missing attribute costs an exception every time.
_MODEL_ATTRIBUTE: dict[type, str] = {}


def model_of(llm: Any) -> str | None:
    """The model an LLM object is configured with (``model`` on most integrations)."""
    cls = type(llm)
    name = _MODEL_ATTRIBUTE.get(cls)
    if name is None:
        name = next((n for n in ("model", "model_name") if hasattr(llm, n)), "")
        _MODEL_ATTRIBUTE[cls] = name
    if not name:
        return None
    value = getattr(llm, name, None)
    return value if isinstance(value, str) and value else None


_PROVIDER: dict[type, str] = {}


def provider_of(llm: Any) -> str | None:
    """``llama_index.llms.<provider>...`` names the provider of integration packages."""
    cls = type(llm)
    provider = _PROVIDER.get(cls)
    if provider is None:
        parts = cls.__module__.split(".")
        provider = parts[2] if len(parts) > 2 and parts[:2] == ["llama_index", "llms"] else ""
        _PROVIDER[cls] = provider
    return provider or None


def usage_of(response: Any) -> tuple[int | None, int | None, int | None]:
    """(prompt, completion, total) tokens of a ``ChatResponse``/``CompletionResponse``:
    ``additional_kwargs`` (set by the OpenAI integration), else ``raw.usage``."""
    found = _usage_in(getattr(response, "additional_kwargs", None))
    if found != (None, None, None):
        return found
    raw = getattr(response, "raw", None)
    usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    if usage is not None and not isinstance(usage, Mapping):
        usage = {key: getattr(usage, key, None)
                 for key in (*_PROMPT_TOKEN_KEYS, *_COMPLETION_TOKEN_KEYS, "total_tokens")}
    return _usage_in(usage)


def _usage_in(usage: Any) -> tuple[int | None, int | None, int | None]:
    if not usage or not (type(usage) is dict or isinstance(usage, Mapping)):
        return None, None, None
    return (_first_int(usage, _PROMPT_TOKEN_KEYS), _first_int(usage, _COMPLETION_TOKEN_KEYS),
            _first_int(usage, ("total_tokens",)))


def _first_int(usage: Mapping[str, Any], keys: Sequence[str]) -> int | None:
    for key in keys:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
