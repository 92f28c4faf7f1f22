"""Reading judge replies. Tolerant of what models wrap around JSON (code fences,
a sentence before it, "yes"/"no" for booleans) and strict about what matters: a
truncated, unparseable or incomplete reply raises ``ReplyError`` with a reason,
so the metric fails instead of getting a made-up value."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_trace.judges.masking import mask

logger = logging.getLogger(__name__)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_TRUE = {"true", "yes", "y", "1", "supported", "ja", "是"}
_FALSE = {"false", "no", "n", "0", "not supported", "unsupported", "nein", "否"}
_INSUFFICIENT = "insufficient information"
_SENTENCE_NUMBER = re.compile(r"^\[?\s*(\d{1,6})\s*\]?\.?$")


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
    # The reason is a fixed string (it becomes a span attribute); the text goes to the log.
    logger.debug("judge reply is not a JSON object: %s", _snippet(text))
    raise ReplyError("the reply is not a JSON object")


def _candidates(text: str) -> list[str]:
    found = [text]
    found += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        found.append(text[start:end + 1])
    return found


def _snippet(text: str, limit: int = 80) -> str:
    """The start of judge text for the debug log, credentials masked."""
    flat = " ".join(mask(text[:4 * limit]).split())
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
    logger.debug("%s is not a yes/no value: %s", what, _snippet(str(value), 40))
    raise ReplyError(f"{what} is not a yes/no value")


def _flag(reply: Mapping[str, Any], key: str) -> bool:
    return as_bool(reply[key], repr(key)) if key in reply else False


def parse_statements(reply: Mapping[str, Any]) -> list[str]:
    return _strings(reply, "statements", "statement")


def parse_questions(reply: Mapping[str, Any]) -> tuple[list[str], bool]:
    """(questions, noncommittal)."""
    return _strings(reply, "questions", "question"), _flag(reply, "noncommittal")


def _selections(value: Any, what: str) -> list[int | str]:
    """Sentence numbers (ints, or strings such as ``"3"`` / ``"[3]"``), or sentences a
    judge copied out instead of numbering them."""
    if not isinstance(value, list):
        raise ReplyError(f"the reply has no list {what!r}")
    out: list[int | str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int | str):
            raise ReplyError(f"{what!r} holds a {type(item).__name__}, not a sentence number")
        if isinstance(item, str):
            number = _SENTENCE_NUMBER.match(item.strip())
            if number is None:
                if item.strip():
                    out.append(item.strip())
                continue
            item = int(number.group(1))
        out.append(item)
    return out


def parse_context_sentences(reply: Mapping[str, Any]) -> tuple[list[int | str], bool]:
    """(selected sentences, insufficient): the paper's "Insufficient Information"
    phrase in place of sentences counts as the flag."""
    selected = _selections(reply.get("sentences"), "sentences")
    insufficient = _flag(reply, "insufficient_information")

    def is_phrase(item: int | str) -> bool:
        return isinstance(item, str) and item.strip(' ."').lower() == _INSUFFICIENT

    if any(is_phrase(s) for s in selected):
        insufficient = True
        selected = [s for s in selected if not is_phrase(s)]
    return selected, insufficient


Verdict = tuple[bool, str, list[int]]


def parse_verdicts(reply: Mapping[str, Any], statements: Sequence[str]) -> list[Verdict]:
    """(supported, reason, evidence sentence numbers) for each statement, in order.
    Entries are matched by ``id`` when every entry has a distinct valid one, else by
    position; a missing verdict fails the whole reply rather than guessing."""
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
    out: list[Verdict] = []
    for i in range(n):
        entry = by_position[i]
        value = entry.get("supported", entry.get("verdict"))
        reason = entry.get("reason")
        evidence = entry.get("evidence", [])
        numbers = [e for e in _selections(evidence, "evidence") if isinstance(e, int)] \
            if isinstance(evidence, list) else []
        out.append((as_bool(value, f"the verdict on statement {i + 1}"),
                    reason.strip() if isinstance(reason, str) else "", numbers))
    return out
