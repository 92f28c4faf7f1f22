"""The attributes of LLM and TOOL spans, built from what LangChain hands to the
callbacks (OpenInference spelling, from the shared builders in ``_attributes``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage

from ragas_trace import semconv as sc
from ragas_trace.collectors import _attributes as attributes
from ragas_trace.collectors.langchain import _messages, _values

# The span attribute limit is 128 by default: messages beyond this (the oldest of a
# long conversation) are left out of an LLM span.
MAX_MESSAGES = 32
_JSON = json.JSONEncoder(default=str, ensure_ascii=False)


def prompt_attributes(messages: Any) -> dict[str, Any]:
    """``llm.input_messages.*`` of an ``on_chat_model_start`` / ``on_llm_start`` call."""
    attrs: dict[str, Any] = {}
    _messages.add_messages(attrs, "input", _messages.prompt_messages(messages), MAX_MESSAGES)
    return attrs


def completion_attributes(response: Any) -> dict[str, Any]:
    """Token usage, response model and ``llm.output_messages.*`` of an ``LLMResult``."""
    message = _messages.completion_message(response)
    attrs: dict[str, Any] = dict(attributes.usage_attributes(
        *_values.usage_of(response, message)))
    model = _values.response_model_of(response)
    if model is not None:
        attrs[sc.GEN_AI_RESPONSE_MODEL] = model
    if message is not None:
        _messages.add_messages(attrs, "output", (message,), MAX_MESSAGES)
    return attrs


def tool_start_attributes(name: str, serialized: Mapping[str, Any] | None, input_str: Any,
                          kwargs: Mapping[str, Any]) -> dict[str, Any]:
    description = serialized.get("description") if isinstance(serialized, Mapping) else None
    call_id = kwargs.get("tool_call_id")
    attrs = dict(attributes.tool_attributes(
        name, description if isinstance(description, str) else None,
        call_id if isinstance(call_id, str) else None))
    inputs = kwargs.get("inputs")
    if isinstance(inputs, Mapping):
        # The tool call's arguments, as JSON (``input_str`` is their Python repr).
        attrs[sc.INPUT_VALUE] = _JSON.encode(dict(inputs))
        attrs[sc.INPUT_MIME_TYPE] = sc.MIME_JSON
    else:
        attrs.update(attributes.input_attributes(attributes.as_text(input_str)))
    return attrs


def tool_end_attributes(output: Any) -> dict[str, Any]:
    """``output.value``: a ``ToolMessage``'s text content, a str, else JSON."""
    if isinstance(output, BaseMessage):
        return dict(attributes.output_attributes(_messages.content_text(output.content)))
    text = attributes.as_text(output)
    if text is not None or output is None:
        return dict(attributes.output_attributes(text))
    try:
        encoded = _JSON.encode(output)
    except (TypeError, ValueError):
        return {}
    return {sc.OUTPUT_VALUE: encoded, sc.OUTPUT_MIME_TYPE: sc.MIME_JSON}


def tool_input(attrs: Mapping[str, Any]) -> str | None:
    """The query a tool was called with (its only argument, else its JSON input): the
    ``input.value`` of the passages its artifact holds."""
    value = attrs.get(sc.INPUT_VALUE)
    if not isinstance(value, str):
        return None
    if attrs.get(sc.INPUT_MIME_TYPE) == sc.MIME_JSON:
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if isinstance(decoded, dict) and len(decoded) == 1:
            only = next(iter(decoded.values()))
            if isinstance(only, str):
                return only
    return value
