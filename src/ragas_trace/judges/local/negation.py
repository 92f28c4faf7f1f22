"""Negation: "X is not involved in Y" against a context that says X is involved, or
the other way round. Word matching drops "not" as a function word, and the
embedding barely moves for it, so it is checked on its own."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragas_trace.judges.local.tokens import Token

_NEGATION = re.compile(
    r"\b(not|never|no|none|nobody|nothing|neither|nor|cannot|without)\b|n't\b"
    r"|\b(nicht|kein(e[mnrs]?)?|nie|niemals|weder|ohne)\b"
    r"|\b(ne|n'|pas|jamais|aucune?|ni|sans)\b"
    r"|\b(nunca|jamás|ningún|ninguna|ninguno|tampoco|sin)\b"
    r"|不是|不会|不能|不再|并不|从不|从未|未曾|没有|没|无法|并非|绝不",
    re.IGNORECASE)
# Negation words that deny nothing: "not only X but also Y" says X.
_NOT_A_DENIAL = re.compile(r"(not|no) (only|just|merely|doubt|least)\b|nothing but\b",
                           re.IGNORECASE)


def is_negated(text: str) -> bool:
    """Whether the text denies something (in English, German, French, Spanish or
    Chinese). Double negation is not undone."""
    return bool(_NEGATION.search(text))


def negated_keys(text: str, tokens: Sequence[Token]) -> frozenset[str]:
    """The keys of the words the text denies: the first content word after each
    negation ("does not cover the battery": cover). ``tokens``: the text's, in order."""
    denied = set()
    at = 0  # the first token not before the current negation's end: one pass in all
    for match in _NEGATION.finditer(text):
        while at < len(tokens) and tokens[at].start < match.end():
            at += 1
        if at < len(tokens) and not _NOT_A_DENIAL.match(text, match.start()):
            denied.add(tokens[at].key)
    return frozenset(denied)


def contradicts(statement: str, statement_tokens: Sequence[Token], statement_negated: bool,
                sentence_negated: bool, sentence_denied: frozenset[str],
                sentence_keys: frozenset[str]) -> bool:
    """Whether the context's sentence denies what the statement says, or the other way
    round: the context's "does not cover the battery" against "the battery is
    covered". Each side's ``is_negated`` comes already read, as do the sentence's
    denied words (``negated_keys``) and token keys, once per sentence. The denied word
    must be one the other text says, or, for a statement that denies, the only word of
    it the sentence lacks ("is not involved in the project" against "is the main
    contractor of the project"). A negation elsewhere in a sentence ("they did not
    love the eggs, which were overcooked") does not deny what a statement says of
    something else ("the eggs were overcooked")."""
    if statement_negated == sentence_negated:
        return False
    said = {t.key for t in statement_tokens}
    if sentence_negated:
        return bool(sentence_denied & said)
    denied = negated_keys(statement, statement_tokens)
    return bool(denied & sentence_keys) or (bool(denied) and said - denied <= sentence_keys)
