"""Comparisons the context makes ("Jupiter is larger than Saturn"), and statements
that turn them round ("Saturn is larger"): the one kind of contradiction in the
context's own words that word matching can see."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragas_trace.judges.local.lexicon import STOPWORDS
from ragas_trace.judges.local.tokens import normalise, stem

# "<word>er than [the] <other>", or "more|less [up to three words] than <other>";
# English and German.
_COMPARISON = re.compile(
    r"\b(?:([^\W\d_]+er)|(more|less|fewer|mehr|weniger)(?:\s+[^\W\d_]+){0,3}?)\s+"
    r"(?:than|als)\s+(?:(?:the|der|die|das)\s+)?([^\W\d_][\w-]*)",
    re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Comparison:
    comparative: str  # normalised: "larger", "more"
    other: str  # stem of what is compared against: the lesser side of "larger"


def comparisons(text: str) -> list[Comparison]:
    found = []
    for m in _COMPARISON.finditer(text):
        other = normalise(m.group(3))
        if other not in STOPWORDS:
            found.append(Comparison(normalise(m.group(1) or m.group(2)), stem(other)))
    return found


def reversed_comparisons(clause: str, context: Sequence[Comparison]) -> list[str]:
    """Names the clause puts before a comparative while the context puts them after
    "than" with the same comparative: "Saturn is larger" against "... larger than
    Saturn". Not flagged: the clause's own "than" ("Saturn is larger than Mars")."""
    words = [(normalise(m.group(0)), m.start()) for m in re.finditer(r"[^\W\d_][\w-]*", clause)]
    flagged = []
    for comparison in context:
        heads = [at for word, at in words if word == comparison.comparative]
        if not heads or re.search(r"\b(than|als)\b", clause[heads[0]:], re.IGNORECASE):
            continue
        flagged += [word for word, at in words
                    if at < heads[0] and stem(word) == comparison.other]
    return flagged
