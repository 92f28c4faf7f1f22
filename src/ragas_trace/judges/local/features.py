"""What the context says about one statement, measured: the evidence a fitted model
(``support_model``) turns into the statement's degree of support.

Each measurement is one named feature: closeness of the statement's embedding to
the nearest context sentence or pair of neighbours, names and numbers the context
lacks (a time it holds on the 24-hour clock is not lacking), its length, and a
structured context's yes / no fields it contradicts. How
they combine is fitted on labelled public data (``tools/fit_local_judge.py``), not set by hand;
a measurement the fit weighs 0 everywhere is deleted, with the rules that fed it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.evidence import Evidence
from ragas_trace.judges.local.negation import is_negated
from ragas_trace.judges.local.numbers import same_clock
from ragas_trace.judges.local.tokens import (
    Kind,
    Token,
    abbreviated,
    clause_groups,
    content_tokens,
    counted,
    defined_in_brackets,
)

STATEMENT_FEATURES = (
    "similarity", "missing_names", "missing_numbers", "log_tokens", "field_conflicts",
)


@dataclass(frozen=True, slots=True)
class StatementEvidence:
    """A statement's features, and what a reason names."""

    features: dict[str, float]
    similarity: float
    conflicts: tuple[str, ...] = ()  # yes / no fields of the context it contradicts
    missing_facts: tuple[str, ...] = ()

    def reason(self) -> str:
        """What the fitted model read: only measurements it weighs."""
        parts = [f"closest context similarity {self.similarity:.2f}"]
        if self.conflicts:
            parts.append("the context's fields say otherwise: " + ", ".join(self.conflicts))
        if self.missing_facts:
            parts.append("not in the context: " + ", ".join(self.missing_facts))
        return "; ".join(parts)


def _distinct(tokens: Iterable[Token]) -> list[Token]:
    """The first token of each key, in order."""
    first: dict[str, Token] = {}
    for token in tokens:
        first.setdefault(token.key, token)
    return list(first.values())


def statement_evidence(statement: str, vector: Vectors, evidence: Evidence, units: Vectors
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
    conflicts = _fields(statement, tokens, evidence)
    features = {
        "field_conflicts": float(len(conflicts)),
        "similarity": similarity,
        "missing_names": float(len(missing_names)),
        "missing_numbers": float(len(missing_numbers)),
        "log_tokens": math.log1p(len(tokens)),
    }
    return StatementEvidence(features, similarity, conflicts,
                             tuple(t.text for t in (*missing_names, *missing_numbers)))


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
