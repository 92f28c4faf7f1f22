"""The evidence stage: the record's passages prepared once, as sentences with their
tokens and the names each refers to (``Evidence``), and with the embedding of every
text the record needs (``Context``), which windows point into and checkers read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.normalise import yes_no_field
from ragas_trace.judges.local.numbers import parts
from ragas_trace.judges.local.statements import opens_with_pronoun, refers_back
from ragas_trace.judges.local.tokens import (
    Kind,
    RarityFn,
    Token,
    Vocabulary,
    content_tokens,
    folded,
    initialisms,
    is_abbreviation,
    spelled_out,
)
from ragas_trace.metrics.sentences import split_sentences

PAIR_DISCOUNT = 0.05  # a sentence read with the one before it counts a little less


@dataclass(frozen=True)
class ContextSentence:
    text: str
    tokens: tuple[Token, ...]
    vocabulary: Vocabulary  # own tokens plus names a pronoun refers back to
    continues: bool = False  # opens with a pronoun for the previous sentence's subject
    refers_back: bool = False  # opens with any word pointing at the previous sentence


@dataclass(frozen=True)
class Evidence:
    sentences: tuple[ContextSentence, ...]
    vocabulary: Vocabulary  # the whole context
    # Yes / no fields of a structured passage: the key's token keys, and the value.
    fields: tuple[tuple[tuple[str, ...], bool], ...] = ()
    clock: frozenset[int] = frozenset()  # the whole numbers in its times, ranges, dates
    flat: str = ""  # all of it, case, accents and spacing folded: for verbatim spans
    abbreviations: frozenset[str] = frozenset()  # keys of its "US", "U.S.", "UNHCR"

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.sentences]


def build_evidence(contexts: Sequence[str]) -> Evidence:
    sentences: list[ContextSentence] = []
    every: list[Token] = []
    for passage in contexts:
        previous_names: tuple[Token, ...] = ()
        for text in split_sentences(passage):
            tokens = tuple(content_tokens(text))
            continues = opens_with_pronoun(text) and bool(previous_names)
            referred = previous_names if continues else ()
            held = (*spelled_out(tokens), *initialisms(text))
            sentences.append(ContextSentence(text, tokens,
                                             Vocabulary(tokens + held + referred),
                                             continues,
                                             bool(previous_names) and refers_back(text)))
            names = tuple(t for t in tokens if t.kind is Kind.NAME or t.text[:1].isupper())
            previous_names = names or previous_names
            every.extend(tokens + held)
    fields = []
    for sentence in sentences:
        field = yes_no_field(sentence.text)
        if field is not None and (keys := tuple(t.key for t in content_tokens(field[0]))):
            fields.append((keys, field[1]))
    vocabulary = Vocabulary(every)
    number_keys = [k for k in vocabulary.keys if k[:1].isdigit() or k[:1] == "-"]
    return Evidence(tuple(sentences), vocabulary, tuple(fields),
                    frozenset(p for k in number_keys if k[:1].isdigit() for p in parts(k)),
                    folded("\n".join(contexts)),
                    frozenset(t.key for s in sentences for t in s.tokens
                              if is_abbreviation(t.text)))



def with_antecedents(evidence: Evidence, vectors: Vectors) -> Vectors:
    """Sentence vectors where a sentence that refers back ("It was completed in 1889.")
    is read together with the one before it (normalised sum): it says what it says
    only after the sentence naming "it"."""
    paired = vectors.copy()
    for i, sentence in enumerate(evidence.sentences):
        if sentence.refers_back and i:
            paired[i] = vectors[i - 1] + vectors[i]
            paired[i] /= max(float(np.linalg.norm(paired[i])), 1e-12)
    return paired


@dataclass(frozen=True)
class Context:
    """A record's passages prepared for checking: their ``evidence``, the embedding of
    each text the record embedded (``vector``), and the embedder's word rarity."""

    evidence: Evidence
    vector: Callable[[str], Vectors]
    rarity: RarityFn
    _stacked: dict[tuple[int, ...], Vectors] = field(default_factory=dict, repr=False)

    def vectors(self, indices: Sequence[int]) -> Vectors:
        """The vectors of the sentences at ``indices`` (kept: statements that share a
        window share them)."""
        key = tuple(indices)
        found = self._stacked.get(key)
        if found is None:
            found = self._stacked[key] = np.stack(
                [self.vector(self.evidence.sentences[i].text) for i in key]) if key \
                else np.zeros((0, 1), np.float32)
        return found
