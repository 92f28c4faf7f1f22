"""Negation: whether a text denies something. Word matching drops "not" as a
function word, and the embedding barely moves for it, so it is read on its own (a
yes / no field's value, a "No, ..." reply, a count that is not a copy)."""

from __future__ import annotations

import re

_NEGATION = re.compile(
    r"\b(not|never|no|none|nobody|nothing|neither|nor|cannot|without)\b|n't\b"
    r"|\b(nicht|kein(e[mnrs]?)?|nie|niemals|weder|ohne)\b"
    r"|\b(ne|n'|pas|jamais|aucune?|ni|sans)\b"
    r"|\b(nunca|jamás|ningún|ninguna|ninguno|tampoco|sin)\b"
    r"|不是|不会|不能|不再|并不|从不|从未|未曾|没有|没|无法|并非|绝不",
    re.IGNORECASE)


def is_negated(text: str) -> bool:
    """Whether the text denies something (in English, German, French, Spanish or
    Chinese). Double negation is not undone."""
    return bool(_NEGATION.search(text))
