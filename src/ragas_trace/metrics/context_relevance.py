"""Context relevance (paper, section 3): the share of context sentences that are
needed to answer the question, as extracted verbatim by a judge.

A judge's copy of a sentence may differ in whitespace, quote characters or the
final full stop, or leave out a few words at either end (at least 70 % of the
sentence, copied verbatim); we accept those differences but count only sentences
that really occur in the context, each at most once, so an invented or
paraphrased sentence never raises the score.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.results import MetricResult, MetricStatus

_QUOTES = str.maketrans({c: '"' for c in "“”„‟«»″〝〞＂「」『』"} | {c: "'" for c in "‘’‚‛‹›′`"})
_SPACE = re.compile(r"\s+")
_END = ".。!?！？…;；"
MIN_COVERAGE = 0.7  # share of a context sentence a partial copy must reproduce


def normalise(sentence: str) -> str:
    """The form in which judge copies are compared with context sentences."""
    text = unicodedata.normalize("NFKC", sentence).translate(_QUOTES)
    return _SPACE.sub(" ", text).strip().rstrip(_END).strip()


@dataclass(frozen=True)
class ContextMatch:
    total: int  # sentences in the context
    kept: tuple[str, ...]  # context sentences (as in the context) the judge kept
    unmatched: tuple[str, ...]  # judge output that is no sentence of the context


def context_sentences(contexts: Sequence[str]) -> list[str]:
    """Sentences of all passages, each passage split on its own."""
    return [s for c in contexts for s in split_sentences(c)]


def match_sentences(contexts: Sequence[str], extracted: Sequence[str]) -> ContextMatch:
    sentences = context_sentences(contexts)
    index: dict[str, list[int]] = {}
    for i, sentence in enumerate(sentences):
        index.setdefault(normalise(sentence), []).append(i)
    kept: set[int] = set()
    unmatched: list[str] = []
    for item in extracted:
        # A judge may return two adjacent sentences as one string: match each.
        whole = normalise(item)
        pieces = [item] if whole in index else split_sentences(" ".join(item.split()))
        for piece in pieces:
            key = normalise(piece)
            if not key:
                continue
            candidates = index.get(key) or _containing(sentences, key)
            free = [i for i in candidates if i not in kept]
            if free:
                kept.add(free[0])
            elif not candidates:
                unmatched.append(piece)
    return ContextMatch(len(sentences), tuple(sentences[i] for i in sorted(kept)),
                        tuple(unmatched))


def _containing(sentences: Sequence[str], piece: str) -> list[int]:
    """Sentences of which ``piece`` is a verbatim part covering most of it: judges
    sometimes drop a leading "However," or a trailing citation mark."""
    found = []
    for i, sentence in enumerate(sentences):
        full = normalise(sentence)
        if piece in full and len(piece) >= MIN_COVERAGE * len(full):
            found.append(i)
    return found


def context_relevance(contexts: Sequence[str], extracted: Sequence[str],
                      insufficient: bool = False) -> tuple[MetricResult, ContextMatch]:
    """|kept sentences| / |context sentences|. "Insufficient information" scores 0;
    a reply whose sentences all fail to occur in the context is a failure, not 0."""
    match = match_sentences(contexts, [] if insufficient else extracted)
    if match.total == 0:
        return MetricResult.unscored(MetricStatus.NO_CONTEXT, "the context has no text"), match
    if insufficient or not extracted:
        return MetricResult.scored(0.0), match
    if not match.kept:
        return MetricResult.unscored(
            MetricStatus.FAILED,
            f"none of the {len(extracted)} sentences the judge returned occurs in the context",
        ), match
    return MetricResult.scored(len(match.kept) / match.total), match
