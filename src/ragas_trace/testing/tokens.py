"""A deterministic, offline token count used by the loopback OpenAI server and by the
cost benchmark, so that both sides of a comparison are counted the same way.

It approximates a BPE tokenizer such as cl100k (tiktoken needs a download to load
one): a CJK character is one token, a word is one token per six letters (started),
a number one token per three digits, any other symbol one token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_PIECES = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"  # CJK
    r"|\d+|[^\W\d_]+|[^\w\s]|_"
)
_PER_MESSAGE = 4  # role and separators, as chat formats add
_PER_REQUEST = 3  # the assistant's reply primer


def count_tokens(text: str) -> int:
    total = 0
    for m in _PIECES.finditer(text):
        piece = m.group()
        if piece.isdigit():
            total += (len(piece) + 2) // 3
        elif len(piece) > 1:
            total += (len(piece) + 5) // 6
        else:
            total += 1
    return total


def count_message_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    """Prompt tokens of a chat request's ``messages`` (text content only)."""
    total = _PER_REQUEST
    for message in messages:
        total += _PER_MESSAGE + count_tokens(_text(message.get("content")))
    return total


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""
