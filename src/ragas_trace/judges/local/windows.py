"""The windows stage: the context sentences each statement (and the question) is read
against, as ``Window``s of consecutive sentences (``windows``).

Up to ``ALL_SENTENCES`` sentences, every statement is read against all of them. But
that costs their product: an answer of a hundred statements over a context of a
thousand sentences would take minutes. Past ``ALL_SENTENCES`` sentences, each
statement is read against the sentences that hold most of its tokens (by weight:
names and numbers fully, words by rarity), each with the sentence before it (a
pronoun's antecedent, a neighbour pair), and only those are embedded. Whole-context
measurements (which of its words the context holds anywhere) still read the whole
context, so cost stays linear in both lengths.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict
from collections.abc import Callable, Sequence

from ragas_trace.judges.local.checker import Window
from ragas_trace.judges.local.evidence import Context, Evidence
from ragas_trace.judges.local.tokens import RarityFn, Token, content_tokens, weight

# Up to this many sentences every statement is read against all of them: the
# development data's contexts mostly (RAGTruth articles: 90 % under 58).
ALL_SENTENCES = 64
PER_STATEMENT = 6  # sentences a statement is read against, besides their neighbours
PER_QUESTION = 24  # sentences scored for context relevance in a long context
# Sentences scored for a key held by more than this many (``best``).
MOST_POSTINGS = 256
# A window is consecutive sentences up to about this many words (MiniCheck's chunks
# are ~400 tokens); a brought checker reads each, the built-in one all of them.
WINDOW_WORDS = 300


def choose(sentences: int, evidence: Callable[[], Evidence], statements: Sequence[str],
           question: str, asked: str, rarity: RarityFn) -> dict[str, list[int]]:
    """The indices of the sentences each statement, and the question (by the terms of
    ``asked``: it and its parts), is read against. A long context's ``evidence`` is
    built here: the windows say which of its sentences to embed."""
    if sentences <= ALL_SENTENCES:
        every = list(range(sentences))
        return {key: every for key in [*statements, *([question] if question else [])]}
    index = SentenceIndex(evidence())
    out = {s: index.best(content_tokens(s), rarity, PER_STATEMENT) for s in statements}
    if question:
        out[question] = index.best(content_tokens(asked), rarity, PER_QUESTION)
    return out


def windows(indices: Sequence[int], context: Context) -> list[Window]:
    """The sentences at ``indices`` as windows of consecutive ones, up to about
    ``WINDOW_WORDS`` words each."""
    groups: list[list[int]] = []
    words = 0
    for i in indices:
        n = len(context.evidence.sentences[i].text.split())
        if not groups or words + n > WINDOW_WORDS:
            groups.append([])
            words = 0
        groups[-1].append(i)
        words += n
    return [Window(" ".join(context.evidence.sentences[i].text for i in group), tuple(group),
                   context) for group in groups]


class SentenceIndex:
    """Which sentences hold each token key (exact keys: a cheap first cut)."""

    def __init__(self, evidence: Evidence) -> None:
        postings: dict[str, list[int]] = defaultdict(list)
        for i, sentence in enumerate(evidence.sentences):
            for key in sentence.vocabulary.keys:
                postings[key].append(i)
        self._postings = dict(postings)
        self._keys = [sentence.vocabulary.keys for sentence in evidence.sentences]

    def best(self, tokens: Sequence[Token], rarity: RarityFn, count: int) -> list[int]:
        """The ``count`` sentences holding the most of ``tokens`` by weight, each with
        the sentence before it, in context order."""
        weights = {t.key: weight(t, rarity) for t in tokens}
        held = sorted((self._postings[k] for k in weights if k in self._postings), key=len)
        # Scored: the sentences holding a key found in at most MOST_POSTINGS of them,
        # and the first MOST_POSTINGS of the next rarest key's. A key in every sentence
        # of a long context made each statement's cost the context's length (an
        # answer of 12,000 short sentences over 24,000 sentences: two minutes).
        candidates = {i for postings in held if len(postings) <= MOST_POSTINGS
                      for i in postings}
        common = [postings for postings in held if len(postings) > MOST_POSTINGS]
        if common:
            candidates.update(common[0][:MOST_POSTINGS])
        scores = {i: sum(w for k, w in weights.items() if k in self._keys[i])
                  for i in candidates}
        top = heapq.nsmallest(count, scores, key=lambda i: (-scores[i], i)) or [0]
        return sorted({j for i in top for j in (i - 1, i) if j >= 0})


def narrowed(evidence: Evidence, indices: Sequence[int]) -> Evidence:
    """``evidence`` with only the sentences at ``indices``; its whole-context parts
    (vocabulary, words, numbers, fields) unchanged."""
    return dataclasses.replace(evidence, sentences=tuple(evidence.sentences[i] for i in indices))
