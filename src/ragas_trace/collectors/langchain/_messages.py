"""Chat messages in every spelling LangChain and LangGraph accept: ``BaseMessage``,
``("user", "text")`` tuples, ``{"role": "user", "content": ...}`` dicts and bare
strings. Read for the question (the latest user message), the answer (the final
assistant text that is not a tool call) and the OpenInference messages of LLM spans."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ragas_trace.collectors._attributes import add_message, as_text

# Message types and role spellings -> OpenInference roles.
_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
          "system": "system", "developer": "system", "tool": "tool", "function": "function"}
_JSON = json.JSONEncoder(default=str, ensure_ascii=False)
# Exact classes whose role is fixed (subclasses go through ``role_of``).
_CLASS_ROLES: dict[type, str] = {HumanMessage: "user", SystemMessage: "system",
                                 AIMessage: "assistant", AIMessageChunk: "assistant",
                                 ToolMessage: "tool"}


def content_text(content: Any) -> str | None:
    """A message's ``content``: a str, or a list of str / ``{"type": "text"}`` blocks."""
    if isinstance(content, str):
        return str.__str__(content)
    if isinstance(content, list):
        texts: list[str] = []
        for block in content:
            text = block if isinstance(block, str) else (
                block.get("text") if isinstance(block, Mapping) else None)
            if isinstance(text, str):
                texts.append(text)
        return "".join(texts) if texts else None
    return as_text(content)


def role_of(message: Any) -> str | None:
    """``user`` / ``assistant`` / ``system`` / ``tool``..., or None if not a message."""
    if isinstance(message, BaseMessage):
        kind = message.type
        role = _ROLES.get(kind)
        if role is not None:
            return role
        if kind.endswith("MessageChunk"):
            kind = kind.removesuffix("MessageChunk").lower()
        if kind == "chat":
            kind = str(getattr(message, "role", "chat"))
        return _ROLES.get(kind, kind)
    if isinstance(message, tuple) and len(message) == 2 and isinstance(message[0], str):
        return _ROLES.get(message[0], message[0])
    if isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        return _ROLES.get(role, role) if isinstance(role, str) else None
    if isinstance(message, str):
        return "user"  # LangGraph's add_messages takes a bare string as a human message
    return None


def text_of(message: Any) -> str | None:
    if isinstance(message, BaseMessage):
        return content_text(message.content)
    if isinstance(message, tuple) and len(message) == 2:
        return content_text(message[1])
    if isinstance(message, Mapping):
        return content_text(message.get("content"))
    return as_text(message)


def _tool_calls(message: Any) -> Sequence[Any]:
    # Only AI messages have tool calls (and a missing attribute is slow to look up).
    calls = (message.tool_calls if isinstance(message, AIMessage)
             else message.get("tool_calls") if isinstance(message, Mapping) else None)
    return calls if isinstance(calls, list) else ()


def as_list(messages: Any) -> Sequence[Any]:
    """A ``messages`` value as a sequence (a single message or string is one)."""
    if isinstance(messages, list | tuple) and not (
            isinstance(messages, tuple) and role_of(messages) is not None):
        return messages
    return (messages,) if messages is not None else ()


def latest_user_text(messages: Any) -> str | None:
    """The latest user message's text: the question of a message-list input."""
    for message in reversed(as_list(messages)):
        if role_of(message) == "user":
            text = text_of(message)
            if text:
                return text
    return None


def final_answer(messages: Any) -> str | None:
    """The last assistant text of the latest turn that is not a tool call; None when
    the turn ends in a tool call or a user message (the agent gave no answer)."""
    for message in reversed(as_list(messages)):
        role = role_of(message)
        if role == "user":
            return None
        if role == "assistant" and not _tool_calls(message):
            text = text_of(message)
            if text:
                return text
    return None


def _call(call: Any) -> tuple[str | None, str, str | None]:
    """``(id, name, JSON arguments)`` of a tool call dict (LangChain's or OpenAI's)."""
    if not isinstance(call, Mapping):
        return None, "", None
    function = call.get("function")
    if isinstance(function, Mapping):  # OpenAI spelling
        name, args = function.get("name"), function.get("arguments")
    else:
        name, args = call.get("name"), call.get("args")
    call_id = call.get("id")
    if args is not None and not isinstance(args, str):
        args = _JSON.encode(args)
    return (call_id if isinstance(call_id, str) else None,
            name if isinstance(name, str) else "", args)


def _fields(message: Any) -> tuple[str, str | None, Sequence[Any]]:
    """``(role, text, tool calls)`` of one message, as ``role_of`` / ``text_of`` /
    ``_tool_calls`` give them; LangChain's own message classes without the ABC checks
    (this runs for every message of every model call)."""
    role = _CLASS_ROLES.get(type(message))
    if role is None:
        return role_of(message) or "user", text_of(message), _tool_calls(message)
    content = message.content
    text = content if type(content) is str else content_text(content)
    if role == "assistant":
        calls = message.tool_calls
        return role, text, calls if type(calls) is list else ()
    return role, text, ()


def add_messages(attrs: dict[str, Any], direction: str, messages: Sequence[Any],
                 max_messages: int) -> None:
    """OpenInference ``llm.<direction>_messages.*`` of LangChain messages, the latest
    ``max_messages`` of them, written into ``attrs``."""
    start = max(0, len(messages) - max_messages)
    for i in range(len(messages) - start):
        role, text, calls = _fields(messages[start + i])
        add_message(attrs, direction, i, role, text,
                    [_call(c) for c in calls] if calls else ())


def prompt_messages(messages: Any) -> Sequence[Any]:
    """An LLM call's input: ``on_chat_model_start`` messages (a list per prompt; the
    first is the one the call answers) or ``on_llm_start`` prompt strings (the first,
    as one user message)."""
    if isinstance(messages, list) and messages and isinstance(messages[0], list):
        return messages[0]
    if isinstance(messages, list) and messages and isinstance(messages[0], str):
        return (("user", messages[0]),)
    return as_list(messages)


def completion_message(response: Any) -> Any:
    """The message (or ``("assistant", text)``) of an ``LLMResult``'s first generation:
    the completion the caller got; None if it has none."""
    generations = getattr(response, "generations", None)
    if not generations or not generations[0]:
        return None
    generation = generations[0][0]
    message = getattr(generation, "message", None)
    if message is not None:
        return message
    text = getattr(generation, "text", None)
    return ("assistant", text) if isinstance(text, str) else None
