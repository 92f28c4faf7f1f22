"""What the context says about one statement, measured: the evidence a fitted model
(``support_model``) turns into the statement's degree of support.

Each measurement is one named feature: closeness of the statement's embedding to
the nearest context sentence or pair of neighbours, the share of its consecutive word
pairs the context holds, names and numbers the context lacks (a time it holds on
the 24-hour clock is not lacking), words put in place of the followed sentence's
own, and a structured context's yes / no fields it contradicts. How
they combine is fitted on labelled public data (``tools/fit_local_judge.py``), not set by hand;
a measurement the fit weighs 0 everywhere is deleted, with the rules that fed it.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.evidence import Evidence
from ragas_trace.judges.local.negation import is_negated
from ragas_trace.judges.local.numbers import same_clock
from ragas_trace.judges.local.substitution import substitutions
from ragas_trace.judges.local.tokens import (
    Kind,
    Token,
    abbreviated,
    clause_groups,
    content_tokens,
    counted,
    defined_in_brackets,
    plain_words,
)

# On words the model knows only as pieces (most German, French and Spanish ones,
# Chinese) its cosines are compressed noise: a substitution's two spans count as
# alike only when their cosine clears this much more.
UNKNOWN_SHIFT = 0.25
_WORD = re.compile(r"[^\W\d_]+")

STATEMENT_FEATURES = (
    "similarity", "missing_names", "missing_numbers", "log_tokens", "change_similarity",
    "bigram_share", "field_conflicts",
)

SimilarityFn = Callable[[str, str], float]
KnownFn = Callable[[str], bool]


@dataclass(frozen=True, slots=True)
class StatementEvidence:
    """A statement's features, and what a reason names."""

    features: dict[str, float]
    similarity: float
    conflicts: tuple[str, ...] = ()  # yes / no fields of the context it contradicts
    missing_facts: tuple[str, ...] = ()
    changed: tuple[tuple[str, str], ...] = field(default=())

    def reason(self) -> str:
        """What the fitted model read: only measurements it weighs."""
        parts = [f"closest context similarity {self.similarity:.2f}"]
        if self.conflicts:
            parts.append("the context's fields say otherwise: " + ", ".join(self.conflicts))
        if self.missing_facts:
            parts.append("not in the context: " + ", ".join(self.missing_facts))
        if self.changed:
            parts.append("says " + ", ".join(f'"{said}" where the context says "{instead}"'
                                             for said, instead in self.changed))
        return "; ".join(parts)


def _distinct(tokens: Iterable[Token]) -> list[Token]:
    """The first token of each key, in order."""
    first: dict[str, Token] = {}
    for token in tokens:
        first.setdefault(token.key, token)
    return list(first.values())


def statement_evidence(
    statement: str, vector: Vectors, evidence: Evidence, units: Vectors,
    *, similarity_of: SimilarityFn | None = None, known: KnownFn | None = None,
    paraphrase_above: float = 0.40,
) -> StatementEvidence:
    """Measure what the context holds of ``statement`` (``units``: the context's
    sentence vectors followed by one per pair of neighbours)."""
    similarities = units @ vector if len(units) else np.zeros(0, np.float32)
    nearest = int(np.argmax(similarities)) if len(units) else -1
    similarity = float(similarities[nearest]) if len(units) else 0.0
    # A statement's counting word is the count it states: "about six hours" against the
    # context's "about three hours" misses a number, as "about 6 hours" does.
    tokens = [Token(t.text, c, Kind.NUMBER, t.start) if (c := counted(t)) is not None else t
              for t in content_tokens(statement) if not defined_in_brackets(statement, t)]
    spelled = abbreviated(statement, evidence.abbreviations)
    missing = [t for t in tokens if t not in evidence.vocabulary and t.start not in spelled]
    # A fact the context lacks is one, however often the statement repeats it; a time
    # it holds on the 24-hour clock ("5 pm" for 17:00) is not lacking.
    missing_numbers = _distinct(t for t in missing if t.kind is Kind.NUMBER
                                and not same_clock(t.key, evidence.clock))
    missing_names = _distinct(t for t in missing if t.kind is Kind.NAME)
    changed: list[tuple[str, str]] = []
    change_similarity = 1.0
    if similarity_of is not None:
        for swap in substitutions(statement, tokens, missing, evidence):
            alike = similarity_of(swap.said, swap.instead)
            if known is not None and not all(
                    known(w) for w in _WORD.findall(f"{swap.said} {swap.instead}")):
                alike -= UNKNOWN_SHIFT
            if alike < paraphrase_above:
                changed.append((swap.said, swap.instead))
                change_similarity = min(change_similarity, alike)
    conflicts = _fields(statement, tokens, evidence)
    pairs = list(itertools.pairwise(plain_words(statement)))
    features = {
        "bigram_share": (sum(1 for b in pairs if b in evidence.bigrams) / len(pairs)
                         if pairs else 1.0),
        "field_conflicts": float(len(conflicts)),
        "similarity": similarity,
        "missing_names": float(len(missing_names)),
        "missing_numbers": float(len(missing_numbers)),
        "log_tokens": math.log1p(len(tokens)),
        "change_similarity": change_similarity,
    }
    return StatementEvidence(
        features, similarity, conflicts,
        tuple(t.text for t in (*missing_names, *missing_numbers)), tuple(changed))


def _fields(statement: str, tokens: Sequence[Token], evidence: Evidence) -> tuple[str, ...]:
    """The structured context's yes / no fields the statement contradicts ("offers
    outdoor seating" where "Outdoor Seating: no"). A clause names a key when it holds
    the key's last word and half of its words ("reservations" names "Restaurants
    Reservations"); it is read for negation."""
    if not evidence.fields:
        return ()
    by_clause = [({t.key for t in group}, text)
                 for group, text in zip(clause_groups(statement, tokens),
                                        _clause_texts(statement, tokens), strict=False)]
    conflicts: list[str] = []
    for keys, yes in evidence.fields:
        for clause_keys, text in by_clause:
            if keys[-1] in clause_keys and 2 * len(clause_keys.intersection(keys)) >= len(keys):
                if is_negated(text) == yes:
                    conflicts.append(" ".join(keys) + (": yes" if yes else ": no"))
                break
    return tuple(dict.fromkeys(conflicts))


def _clause_texts(statement: str, tokens: Sequence[Token]) -> list[str]:
    """The text of each clause group of ``clause_groups`` (same order)."""
    groups = clause_groups(statement, tokens)
    texts = []
    for i, group in enumerate(groups):
        start = group[0].start if i else 0
        end = groups[i + 1][0].start if i + 1 < len(groups) else len(statement)
        texts.append(statement[start:end])
    return texts
