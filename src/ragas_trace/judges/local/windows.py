"""Evidence windows: the few context sentences a statement is read against when the
context is long.

Reading every statement against every sentence costs their product; an answer of a
hundred statements over a context of a thousand sentences would take minutes. Past
``ALL_SENTENCES`` sentences, each statement is read against the sentences that hold
most of its tokens (by weight: names and numbers fully, words by rarity), each with
the sentence before it (a pronoun's antecedent, a neighbour pair), and only those are
embedded. Whole-context measurements (which of its words the context holds anywhere)
still read the whole context, so cost stays linear in both lengths.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence

from ragas_trace.judges.local.evidence import Evidence
from ragas_trace.judges.local.tokens import RarityFn, Token, weight

# Up to this many sentences every statement is read against all of them: the
# development data's contexts mostly (RAGTruth articles: 90 % under 58).
ALL_SENTENCES = 64
PER_STATEMENT = 6  # sentences a statement is read against, besides their neighbours
PER_QUESTION = 24  # sentences scored for context relevance in a long context


class SentenceIndex:
    """Which sentences hold each token key (exact keys: a cheap first cut)."""

    def __init__(self, evidence: Evidence) -> None:
        postings: dict[str, list[int]] = defaultdict(list)
        for i, sentence in enumerate(evidence.sentences):
            for key in sentence.vocabulary.keys:
                postings[key].append(i)
        self._postings = dict(postings)
        self.size = len(evidence.sentences)

    def best(self, tokens: Sequence[Token], rarity: RarityFn, count: int) -> list[int]:
        """The ``count`` sentences holding the most of ``tokens`` by weight, each with
        the sentence before it, in context order."""
        scores: dict[int, float] = defaultdict(float)
        for key, w in {t.key: weight(t, rarity) for t in tokens}.items():
            for i in self._postings.get(key, ()):
                scores[i] += w
        top = sorted(scores, key=lambda i: (-scores[i], i))[:count] or [0]
        return sorted({j for i in top for j in (i - 1, i) if j >= 0})


def narrowed(evidence: Evidence, indices: Sequence[int]) -> Evidence:
    """``evidence`` with only the sentences at ``indices``; its whole-context parts
    (vocabulary, words, numbers, fields) unchanged."""
    return dataclasses.replace(evidence, sentences=tuple(evidence.sentences[i] for i in indices))
