"""Reading judge replies. Tolerant of what models wrap around JSON (code fences,
a sentence before it, "yes"/"no" for booleans) and strict about what matters: a
truncated, unparseable or incomplete reply raises ``ReplyError`` with a reason,
so the metric fails instead of getting a made-up value."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_TRUE = {"true", "yes", "y", "1", "supported", "ja", "是"}
_FALSE = {"false", "no", "n", "0", "not supported", "unsupported", "nein", "否"}
_INSUFFICIENT = "insufficient information"


class ReplyError(ValueError):
    """The judge's reply cannot be used; ``str(exc)`` says why."""


def parse_json_reply(content: str | None, finish_reason: str | None) -> dict[str, Any]:
    """The JSON object in a chat reply."""
    if finish_reason == "length":
        raise ReplyError("the reply was truncated (finish_reason=length)")
    if finish_reason == "content_filter":
        raise ReplyError("the reply was withheld by a content filter")
    text = (content or "").strip()
    if not text:
        raise ReplyError("the reply was empty")
    for candidate in _candidates(text):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ReplyError(f"the reply is not a JSON object: {_snippet(text)}")


def _candidates(text: str) -> list[str]:
    found = [text]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        found.append(text[start:end + 1])
    return found


def _snippet(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def _strings(reply: Mapping[str, Any], key: str, item_key: str | None = None) -> list[str]:
    value = reply.get(key)
    if not isinstance(value, list):
        raise ReplyError(f"the reply has no list {key!r}")
    out: list[str] = []
    for item in value:
        if isinstance(item, Mapping) and item_key is not None:
            item = item.get(item_key)
        if not isinstance(item, str):
            raise ReplyError(f"{key!r} holds a {type(item).__name__}, not text")
        if item.strip():
            out.append(item.strip())
    return out


def as_bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise ReplyError(f"{what} is not a yes/no value: {_snippet(str(value), 40)}")


def _flag(reply: Mapping[str, Any], key: str) -> bool:
    return as_bool(reply[key], repr(key)) if key in reply else False


def parse_statements(reply: Mapping[str, Any]) -> list[str]:
    return _strings(reply, "statements", "statement")


def parse_questions(reply: Mapping[str, Any]) -> tuple[list[str], bool]:
    """(questions, noncommittal)."""
    return _strings(reply, "questions", "question"), _flag(reply, "noncommittal")


def parse_context_sentences(reply: Mapping[str, Any]) -> tuple[list[str], bool]:
    """(sentences, insufficient): the paper's "Insufficient Information" phrase in
    place of sentences counts as the flag."""
    sentences = _strings(reply, "sentences", "sentence")
    insufficient = _flag(reply, "insufficient_information")
    if any(s.strip(' ."').lower() == _INSUFFICIENT for s in sentences):
        insufficient = True
        sentences = [s for s in sentences if s.strip(' ."').lower() != _INSUFFICIENT]
    return sentences, insufficient


def parse_verdicts(reply: Mapping[str, Any], statements: Sequence[str]) -> list[tuple[bool, str]]:
    """(supported, reason) for each statement, in order. Entries are matched by ``id``
    when every entry has a distinct valid one, else by position; a missing verdict
    fails the whole reply rather than guessing."""
    raw = reply.get("verdicts")
    if not isinstance(raw, list) or not all(isinstance(v, Mapping) for v in raw):
        raise ReplyError("the reply has no list of verdict objects 'verdicts'")
    n = len(statements)
    ids = [v.get("id") for v in raw]
    if all(isinstance(i, int) and 1 <= i <= n for i in ids) and len(set(ids)) == len(ids):
        by_position: dict[int, Mapping[str, Any]] = {int(i) - 1: v for i, v in zip(ids, raw,
                                                                                  strict=True)}
    else:
        by_position = dict(enumerate(raw))
    if len(by_position) != n or set(by_position) != set(range(n)):
        raise ReplyError(f"the reply has {len(raw)} verdicts for {n} statements")
    out: list[tuple[bool, str]] = []
    for i in range(n):
        entry = by_position[i]
        value = entry.get("supported", entry.get("verdict"))
        reason = entry.get("reason", "")
        out.append((as_bool(value, f"the verdict on statement {i + 1}"),
                    reason if isinstance(reason, str) else ""))
    return out
