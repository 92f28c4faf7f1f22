"""Chat messages as instrumentations serialise a graph's ``{"messages": [...]}`` state
into ``input.value`` / ``output.value`` JSON: ``{"role": "user", "content": ...}``,
``{"type": "human", "content": ...}``, LangChain's ``{"lc": 1, "id": [..., "HumanMessage"],
"kwargs": {...}}`` and ``["user", "..."]`` pairs; content a string or text blocks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_ROLES = {"human": "user", "user": "user", "humanmessage": "user",
          "ai": "assistant", "assistant": "assistant", "aimessage": "assistant",
          "aimessagechunk": "assistant"}


def _parts(message: Any) -> tuple[str | None, Any, bool]:
    """(role, content, has tool calls) of one serialised message."""
    if isinstance(message, list) and len(message) == 2 and isinstance(message[0], str):
        return _ROLES.get(message[0].lower()), message[1], False
    if not isinstance(message, Mapping):
        return None, None, False
    kwargs = message.get("kwargs")
    body: Mapping[str, Any] = kwargs if isinstance(kwargs, Mapping) else message
    role = body.get("role", body.get("type"))
    ids = message.get("id")
    if not isinstance(role, str) and isinstance(ids, list) and ids and isinstance(ids[-1], str):
        role = ids[-1]
    calls = body.get("tool_calls")
    return (_ROLES.get(role.lower()) if isinstance(role, str) else None, body.get("content"),
            bool(calls))


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content or None
    if isinstance(content, list):
        texts = [b if isinstance(b, str) else b.get("text") for b in content
                 if isinstance(b, str | Mapping)]
        joined = "".join(t for t in texts if isinstance(t, str))
        return joined or None
    return None


def latest_text(messages: Sequence[Any], role: str) -> str | None:
    """The latest ``user`` message's text; or, for ``assistant``, the last assistant
    text of the latest turn that is not a tool call."""
    for message in reversed(messages):
        found, content, calls = _parts(message)
        if role == "assistant" and found == "user":
            return None
        if found == role and not calls:
            text = _text(content)
            if text is not None:
                return text
    return None
