"""Words put in place of the context's own: a statement that follows one context
sentence but says something else at one place in it.

"... classified according to their size" for a context sentence "... classified
according to their inherent difficulty": every word but "size" is the context's,
so the share of grounded words stays high and the embedding barely moves, yet the
statement changes the fact the sentence states. Where the sentence holds other words
between the same neighbours, the statement's words stand *instead of* them; whether
that is a paraphrase ("built" for "constructed") or another fact is then a question
of meaning, which the caller settles by comparing the two spans' embeddings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragas_trace.judges.local.evidence import ContextSentence, Evidence
from ragas_trace.judges.local.lexicon import PRONOUNS
from ragas_trace.judges.local.tokens import Kind, Token

# The statement follows a context sentence when that sentence holds this share of the
# statement's grounded tokens and the statement this share of the sentence's tokens
# (outside the changed span): a copy with one change, not a paraphrase that restates
# part of the sentence in its own order and words.
FOLLOWS_SHARE = 0.8
MIN_GROUNDED = 3  # fewer grounded tokens: too little to tell what the statement follows
# A span in the context more than this many tokens longer than the statement's is not
# its counterpart: the neighbours are far apart, the statement skipped a passage.
MAX_EXTRA_TOKENS = 1
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True, slots=True)
class Substitution:
    said: str  # the statement's words that the context lacks
    instead: str  # the words the followed context sentence has in their place


def substitutions(statement: str, tokens: Sequence[Token], missing: Sequence[Token],
                  evidence: Evidence) -> list[Substitution]:
    """The runs of the statement's words the context lacks (not names or numbers:
    those are counted as missing facts anyway) that stand where the context sentence
    the statement follows has other words between the same neighbours."""
    missing_keys = {t.key for t in missing}
    grounded = [t for t in tokens if t.key not in missing_keys]
    if len(grounded) < MIN_GROUNDED or not missing:
        return []
    followed = _followed(grounded, evidence.sentences)
    if followed is None:
        return []
    own = [t.key for t in followed.tokens]
    said_keys = {t.key for t in tokens}
    found = []
    for run in _missing_runs(tokens, missing_keys):
        if any(t.kind is not Kind.WORD for t in run):
            continue
        left = _anchor(tokens[:tokens.index(run[0])][::-1], own)
        right = _anchor(tokens[tokens.index(run[-1]) + 1:], own)
        if left is None and right is None:
            continue
        low = -1 if left is None else own.index(left)
        high = len(own) if right is None else _index_after(own, right, low)
        between = [t for t in followed.tokens[low + 1:high] if t.key not in said_keys]
        if not between or len(between) > len(run) + MAX_EXTRA_TOKENS:
            continue
        rest = [t for t in followed.tokens if t not in between]
        if rest and sum(1 for t in rest if t.key in said_keys) < FOLLOWS_SHARE * len(rest):
            continue
        swap = _trimmed(_span(statement, run), _span(followed.text, between))
        # A pronoun stands for what the context named before it: a statement naming
        # that there ("老城墙主要..." for "它主要...") resolves the reference, it does
        # not change the fact, and the spans' embeddings cannot tell which.
        if swap.instead.casefold() not in PRONOUNS:
            found.append(swap)
    return found


def _followed(grounded: Sequence[Token], sentences: Sequence[ContextSentence]
              ) -> ContextSentence | None:
    best, share = None, 0.0
    for sentence in sentences:
        keys = {t.key for t in sentence.tokens}
        held = sum(1 for t in grounded if t.key in keys) / len(grounded)
        if held > share:
            best, share = sentence, held
    return best if share >= FOLLOWS_SHARE else None


def _missing_runs(tokens: Sequence[Token], missing_keys: set[str]) -> list[list[Token]]:
    runs: list[list[Token]] = []
    current: list[Token] = []
    for token in tokens:
        if token.key in missing_keys:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _anchor(neighbours: Sequence[Token], own: list[str]) -> str | None:
    """The nearest neighbouring token that the followed sentence also has."""
    return next((t.key for t in neighbours if t.key in own), None)


def _index_after(own: list[str], key: str, low: int) -> int:
    for i in range(low + 1, len(own)):
        if own[i] == key:
            return i
    return low + 1  # the neighbours come the other way round: no span between them


def _span(text: str, tokens: Sequence[Token]) -> str:
    return text[tokens[0].start:tokens[-1].start + len(tokens[-1].text)]


def _trimmed(said: str, instead: str) -> Substitution:
    """CJK character pairs overlap their neighbours ("卖包子和" for "卖豆腐和"): the
    characters both spans share at their ends are those neighbours, not the change."""
    while len(said) > 1 and len(instead) > 1 and said[0] == instead[0] and _CJK.match(said):
        said, instead = said[1:], instead[1:]
    while len(said) > 1 and len(instead) > 1 and said[-1] == instead[-1] \
            and _CJK.match(said[-1]):
        said, instead = said[:-1], instead[:-1]
    return Substitution(said, instead)
