"""Lone surrogates: code points U+D800..U+DFFF on their own, which a Python str can
hold (from ``json.loads`` of ``"\\udc80"``, or bytes decoded with ``surrogateescape``)
but UTF-8 cannot encode. Whatever must encode text (a tokenizer, a protobuf string, a
UTF-8 file) gets it with each one replaced by U+FFFD."""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; ``text`` itself (the same
    object) when it has none."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)
