"""Reading judge replies. Tolerant of what models wrap around JSON (code fences,
a sentence before it, "yes"/"no" for booleans) and strict about what matters: a
truncated, unparseable or incomplete reply raises ``ReplyError`` with a reason,
so the metric fails instead of getting a made-up value."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ragas_trace.judges.masking import mask

logger = logging.getLogger(__name__)

T = TypeVar("T")

_DECODER = json.JSONDecoder()
# Bounds the work on a hostile reply full of braces (a reply can be megabytes).
_MAX_DECODE_ATTEMPTS = 64
_NOT_COMPARED = re.compile(r"\[\d+\]|\s+")
_TRUE = {"true", "yes", "y", "1", "supported", "ja", "是"}
_FALSE = {"false", "no", "n", "0", "not supported", "unsupported", "nein", "否"}
_INSUFFICIENT = "insufficient information"
_SENTENCE_NUMBER = re.compile(r"^\[?\s*(\d{1,6})\s*\]?\.?$")


class ReplyError(ValueError):
    """The judge's reply cannot be used; ``str(exc)`` says why."""


def parse_reply(content: str | None, finish_reason: str | None,
                parse: Callable[[dict[str, Any]], T], quoted: str = "") -> T:
    """The judge's own verdict in a chat reply: the last JSON object that ``parse``
    accepts (for verdicts, one per statement asked about) and that is not a copy of
    text in the request (``quoted``). A reply may quote a passage's JSON before or
    after its own; the first parseable block is not necessarily the judge's."""
    if finish_reason == "length":
        raise ReplyError("the reply was truncated (finish_reason=length)")
    if finish_reason == "content_filter":
        raise ReplyError("the reply was withheld by a content filter")
    text = (content or "").strip()
    if not text:
        raise ReplyError("the reply was empty")
    objects = _json_objects(text)
    if not objects:
        # The reason is a fixed string (it becomes a span attribute); the text goes to
        # the log.
        logger.debug("judge reply is not a JSON object: %s", _snippet(text))
        raise ReplyError("the reply is not a JSON object")
    request = _comparable(quoted)
    error: ReplyError | None = None
    for raw, value in reversed(objects):
        if request and _comparable(raw) in request:
            continue  # echoed from the passages, the question or the answer
        try:
            return parse(value)
        except ReplyError as exc:
            error = error or exc  # the last block's reason says most
    raise error or ReplyError("the reply holds only JSON quoted from the request")


def _json_objects(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(source text, object) of each top-level JSON object in ``text``, in order:
    the whole reply, or objects inside code fences or prose."""
    found: list[tuple[str, dict[str, Any]]] = []
    start = text.find("{")
    attempts = 0
    while start >= 0 and attempts < _MAX_DECODE_ATTEMPTS:
        attempts += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append((text[start:end], value))
        start = text.find("{", end)
    return found


def _comparable(text: str) -> str:
    """``text`` without whitespace and the prompt's ``[n]`` sentence numbers, so a
    block copied out of the numbered context is recognised."""
    return _NOT_COMPARED.sub("", text)


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
