"""The normalise stage: the passages as the later stages read them (``passages``):
each once, and a structured one (a JSON record, as data-to-text apps retrieve) read as
sentences through one adapter (``flatten_passage``): one "parent / key: value." line
per field, camelCase keys split into words, booleans as yes / no, so that the answer's
words and numbers can be looked up in them as in prose."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ragas_trace.judges.local.tokens import plain_words

MAX_STRUCTURED_CHARS = 200_000  # larger: read as text, not parsed
# Not between two halves of two letters: "WiFi" is one word, "OutdoorSeating" two.
_CAMEL = re.compile(r"(?<=[a-z])(?<!\b[A-Z][a-z])(?=[A-Z])|(?<=[a-z])(?=[A-Z][a-z]{2})"
                    r"|(?<=[A-Z])(?=[A-Z][a-z])")


@dataclass(frozen=True, slots=True)
class Passages:
    texts: list[str]  # each passage once, a structured one as lines of "key: value."
    words: frozenset[str]  # the passages' words as written (a structured one unflattened)


def passages(contexts: Sequence[str] | str) -> Passages:
    """The record's passages: blank ones dropped, and one retrieved twice read once
    (it says nothing twice)."""
    given = [contexts] if isinstance(contexts, str) else [c for c in contexts
                                                          if isinstance(c, str)]
    return Passages(list(dict.fromkeys(flatten_passage(c) for c in given if c.strip())),
                    frozenset(plain_words("\n".join(given))))


def flatten_passage(passage: str) -> str:
    """The passage as lines of "key: value." when it is a JSON object or array,
    else the passage unchanged."""
    text = passage.strip()
    if not text or text[0] not in "{[" or len(text) > MAX_STRUCTURED_CHARS:
        return passage
    try:
        value = json.loads(text)
        if not isinstance(value, (dict, list)):
            return passage
        return "\n".join(_lines(value, ()))
    except (ValueError, RecursionError):  # RecursionError: nested about a thousand deep
        return passage


def _lines(value: Any, path: tuple[str, ...]) -> Iterator[str]:
    if isinstance(value, dict):
        for name, item in value.items():
            key = _CAMEL.sub(" ", str(name).replace("_", " ")).strip()
            yield from _lines(item, (*path, key))
    elif isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            yield _line(path, ", ".join(_scalar(v) for v in value))
        else:
            for item in value:
                yield from _lines(item, path)
    else:
        yield _line(path, _scalar(value))


def _line(path: tuple[str, ...], value: str) -> str:
    # The parent key says what the field belongs to ("Ambience / casual: no."); the
    # field's own key, after the slash, is what an answer names.
    label = " / ".join(path[-2:]) if path else ""
    text = f"{label}: {value}" if label else value
    return text if text.endswith((".", "!", "?")) else text + "."


def _scalar(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if value is None:
        return "none"
    return str(value)


_FIELD = re.compile(r"^(?:[^:]*/\s*)?(?P<key>[^/:]+):\s*(?P<value>yes|no)\.$")


def yes_no_field(sentence: str) -> tuple[str, bool] | None:
    """The key and value of a flattened yes / no field ("Outdoor Seating", False for
    "attributes / Outdoor Seating: no."), else None."""
    match = _FIELD.match(sentence.strip())
    return (match.group("key"), match.group("value") == "yes") if match else None
