"""What a workflow run, a tool call and an LLM call carry, read from LlamaIndex objects:
the start event's question, the stop event's answer, a memory's session id, passages
a step wrote into its output event, a tool's name/input/output and chat messages.
Each reader accepts anything and returns ``None`` (or nothing) for shapes it does not
know."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms import types as llm_types
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    PydanticResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.schema import NodeWithScore
from llama_index.core.tools.types import ToolOutput
from llama_index.core.workflow import Event, StopEvent
from pydantic import BaseModel

from ragas_trace.collectors._attributes import Message, as_text
from ragas_trace.collectors.llamaindex._values import ANSWER_KEYS, answer_of, structured_answer

# llama-index-core 0.14 keeps tool calls as content blocks; older releases have none.
_TOOL_CALL_BLOCK: type | None = getattr(llm_types, "ToolCallBlock", None)
# A start event's question: the keys a RAG app uses.
_QUESTION_KEYS = ("user_msg", "query", "question", "input", "query_str", "message", "prompt")
# ChatMemoryBuffer's key when the app names none: the same for every conversation.
_DEFAULT_CHAT_STORE_KEY = "chat_history"


def _field(event: Any, key: str) -> Any:
    """A declared field of a workflow event, else one of its free-form keys."""
    if key in type(event).model_fields:
        return getattr(event, key, None)
    data = getattr(event, "_data", None)
    return data.get(key) if isinstance(data, dict) else None


def _message_text(message: Any) -> str | None:
    if isinstance(message, str):
        return message
    if isinstance(message, ChatMessage):
        return message.content
    return as_text(message)


def question_of_run(bound_args: inspect.BoundArguments) -> str | None:
    """The question of a workflow run: the agent's ``user_msg`` (else the latest user
    message of ``chat_history``), or the start event's query under the usual keys."""
    event = bound_args.arguments.get("start_event")
    if not isinstance(event, Event):
        return None
    for key in _QUESTION_KEYS:
        value = _field(event, key)
        if value is not None:
            text = _message_text(value)
            if text is not None:
                return text
    history = _field(event, "chat_history")
    if isinstance(history, Sequence):
        for message in reversed(history):
            if isinstance(message, ChatMessage) and message.role.value == "user":
                return message.content
    return None


def session_of_run(bound_args: inspect.BoundArguments) -> str | None:
    event = bound_args.arguments.get("start_event")
    return session_of_memory(_field(event, "memory")) if isinstance(event, Event) else None


def session_of_memory(memory: Any) -> str | None:
    """``Memory.session_id``, or a ``ChatMemoryBuffer``'s ``chat_store_key`` when the app
    chose one (the default key is shared by every conversation, so it is no id)."""
    if memory is None:
        return None
    session = getattr(memory, "session_id", None)
    if isinstance(session, str) and session:
        return session
    key = getattr(memory, "chat_store_key", None)
    if isinstance(key, str) and key and key != _DEFAULT_CHAT_STORE_KEY:
        return key
    return None


def result_of_stop(event: StopEvent) -> Any:
    """The stop event's ``result``; a subclass's fields when it sets none."""
    result = event.result
    return event if result is None else result


def answer_of_result(result: Any) -> str | None:
    """The answer in a workflow's result: an agent's ``AgentOutput`` (its response
    message), a str, a ``Response``, a mapping / event with the usual keys, or a
    pydantic model (its answer field, else its JSON)."""
    if result is None:
        return None
    response = getattr(result, "response", None)
    if isinstance(response, ChatMessage):
        return response.content
    text = answer_of(result)
    if text is not None:
        return text
    if isinstance(result, Mapping):
        for key in ANSWER_KEYS:
            if key in result:
                return answer_of(result[key])
    if isinstance(result, Event):
        for key in ANSWER_KEYS:
            value = _field(result, key)
            if value is not None:
                return answer_of(value)
        return None
    if isinstance(result, BaseModel):  # a structured output (``astructured_predict``)
        return structured_answer(result)
    return None


_RESPONSES = (Response, StreamingResponse, AsyncStreamingResponse, PydanticResponse)


def _node_list(value: Any) -> list[NodeWithScore] | None:
    """``value`` if it is a list of ``NodeWithScore``, a ``Response``'s source nodes, or
    the nodes a tool returned (``ToolOutput.raw_output``). Checks types only: this runs
    on every value of every step's output event."""
    if type(value) is list:
        return value if value and isinstance(value[0], NodeWithScore) else None
    if isinstance(value, _RESPONSES):
        source = value.source_nodes
        return source if source and isinstance(source[0], NodeWithScore) else None
    if isinstance(value, ToolOutput):
        raw = value.raw_output
        return None if isinstance(raw, ToolOutput) else _node_list(raw)
    return None


def passages_in(value: Any) -> list[NodeWithScore]:
    """``NodeWithScore``s a step wrote into its output event (a field holding a list of
    them, a ``Response`` or a ``ToolOutput``), or that a tool returned."""
    if not isinstance(value, Event):
        return _node_list(value) or []
    found: list[NodeWithScore] = []
    # A pydantic model's __dict__ holds its field values; _data the free-form ones.
    for values in (vars(value).values(), value._data.values()):
        for item in values:
            nodes = _node_list(item)
            if nodes is not None:
                found.extend(nodes)
    result = value.result if isinstance(value, StopEvent) else None
    nodes = _node_list(result)
    if nodes is not None:
        found.extend(nodes)
    elif isinstance(result, Mapping):
        for item in result.values():
            nodes = _node_list(item)
            if nodes is not None:
                found.extend(nodes)
    return found


def node_id(item: Any) -> str | None:
    node = getattr(item, "node", item)
    doc_id = getattr(node, "node_id", None)
    return doc_id if isinstance(doc_id, str) else None


# Tools -------------------------------------------------------------------------

def tool_identity(tool: Any) -> tuple[str, str | None]:
    metadata = getattr(tool, "metadata", None)
    name = getattr(metadata, "name", None)
    description = getattr(metadata, "description", None)
    return (name if isinstance(name, str) and name else type(tool).__name__,
            description if isinstance(description, str) else None)


def tool_input(bound_args: inspect.BoundArguments) -> str | None:
    """A tool call's arguments as JSON (``call(*args, **kwargs)``)."""
    arguments = bound_args.arguments
    kwargs = arguments.get("kwargs")
    args = arguments.get("args")
    if not kwargs and args:
        value: Any = args[0] if len(args) == 1 else list(args)
    else:
        value = kwargs or {}
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False)


def only_argument(arguments: Any) -> str | None:
    """A tool call's query: its only argument when that is a str, else its JSON."""
    if not isinstance(arguments, str):
        return None
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(decoded, dict) and len(decoded) == 1:
        only = next(iter(decoded.values()))
        if isinstance(only, str):
            return only
    return arguments


def tool_output(result: Any) -> tuple[str | None, bool]:
    """(text, is_error) of a ``ToolOutput``."""
    content = getattr(result, "content", None)
    text = content if isinstance(content, str) else as_text(result)
    return text, getattr(result, "is_error", False) is True


# Messages ----------------------------------------------------------------------

def chat_messages(messages: Any) -> list[Message]:
    if not isinstance(messages, Sequence):
        return []
    return [m for m in map(_message, messages) if m is not None]


def _message(message: Any) -> Message | None:
    if not isinstance(message, ChatMessage):
        return None
    role = message.role
    return Message(getattr(role, "value", str(role)), message.content, _tool_calls(message))


def _tool_calls(message: ChatMessage) -> tuple[tuple[str | None, str, str | None], ...]:
    calls: list[tuple[str | None, str, str | None]] = []
    block_type = _TOOL_CALL_BLOCK
    if block_type is not None:
        for block in message.blocks:
            if isinstance(block, block_type):
                call: Any = block
                calls.append((call.tool_call_id, call.tool_name, _arguments(call.tool_kwargs)))
    # OpenAI-style integrations keep them in additional_kwargs (dicts or SDK objects).
    for call in message.additional_kwargs.get("tool_calls") or ():
        function = _get(call, "function")
        name = _get(function, "name")
        if isinstance(name, str):
            call_id = _get(call, "id")
            calls.append((call_id if isinstance(call_id, str) else None, name,
                          _arguments(_get(function, "arguments"))))
    return tuple(calls)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, Mapping) else getattr(value, key, None)


def _arguments(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False)


def input_messages(event: Any) -> list[Message]:
    """An LLM start event's prompt: the chat messages, or a completion's prompt."""
    messages = getattr(event, "messages", None)
    if messages is not None:
        return chat_messages(messages)
    prompt = getattr(event, "prompt", None)
    return [Message("user", prompt)] if isinstance(prompt, str) else []


def output_messages(response: Any) -> list[Message]:
    """A ``ChatResponse``'s message, or a ``CompletionResponse``'s text."""
    message = getattr(response, "message", None)
    if isinstance(message, ChatMessage):
        found = _message(message)
        return [found] if found is not None else []
    text = getattr(response, "text", None)
    return [Message("assistant", text)] if isinstance(text, str) else []
