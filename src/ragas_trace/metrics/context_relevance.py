"""Context relevance (paper, section 3): the share of context sentences that are
needed to answer the question, as selected by a judge.

The judge selects sentences by their number in ``context_sentences`` (what the
paper's verbatim extraction identifies, at a fraction of the completion tokens). A
judge that copies a sentence out instead is understood too: its copy may differ in
whitespace, quote characters or the final full stop, or leave out a few words at
either end (at least 70 % of the sentence, copied verbatim). Either way only
sentences that really occur in the context count, each at most once, so an invented
sentence or a number out of range never raises the score.
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


def passage_sentences(contexts: Sequence[str]) -> list[list[str]]:
    """Each passage's sentences, each passage split on its own."""
    return [split_sentences(c) for c in contexts]


def context_sentences(contexts: Sequence[str]) -> list[str]:
    """Sentences of all passages in order: the numbering the judge selects from."""
    return [s for sentences in passage_sentences(contexts) for s in sentences]


def match_sentences(contexts: Sequence[str], extracted: Sequence[int | str]) -> ContextMatch:
    """The context sentences a judge selected: 1-based numbers, or copied sentences."""
    sentences = context_sentences(contexts)
    index: dict[str, list[int]] = {}
    for i, sentence in enumerate(sentences):
        index.setdefault(normalise(sentence), []).append(i)
    kept: set[int] = set()
    unmatched: list[str] = []
    for item in extracted:
        if isinstance(item, int):
            if 1 <= item <= len(sentences):
                kept.add(item - 1)
            else:
                unmatched.append(f"[{item}]")
            continue
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


def context_relevance(contexts: Sequence[str], extracted: Sequence[int | str],
                      insufficient: bool = False) -> tuple[MetricResult, ContextMatch]:
    """|kept sentences| / |context sentences|. "Insufficient information" scores 0;
    a reply whose selections all fail to name a context sentence is a failure, not 0."""
    match = match_sentences(contexts, [] if insufficient else extracted)
    if match.total == 0:
        return MetricResult.unscored(MetricStatus.NO_CONTEXT, "the context has no text"), match
    if insufficient or not extracted:
        return MetricResult.scored(0.0), match
    if not match.kept:
        return MetricResult.unscored(
            MetricStatus.FAILED,
            f"none of the {len(extracted)} sentences the judge selected is in the context",
        ), match
    return MetricResult.scored(len(match.kept) / match.total), match
