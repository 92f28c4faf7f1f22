"""The retrieved context, prepared once per record: its sentences, their tokens, and
which names each sentence refers to."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.lexicon import STOPWORDS
from ragas_trace.judges.local.numbers import parts, value
from ragas_trace.judges.local.structured import yes_no_field
from ragas_trace.judges.local.tokens import (
    Kind,
    Token,
    Vocabulary,
    content_tokens,
    fold_accents,
    initialisms,
    is_abbreviation,
    normalise,
    spelled_out,
)
from ragas_trace.metrics.sentences import split_sentences

# A sentence that opens with a subject pronoun continues the previous sentence's
# subject ("Curie won ... . She shared ..."); a possessive opener ("His rival, Gray, ...")
# does not, since its subject is someone else.
_SUBJECT_PRONOUN = re.compile(
    r"^\W*(he|she|it|they|this|these|er|sie|es|dies|diese[rs]?)\b|^\W*[他她它]",
    re.IGNORECASE)
# Openers that refer back without making the sentence's subject the previous one's:
# possessives ("Its founder, ...") and French and Spanish subject pronouns.
_REFERS_BACK = re.compile(
    r"^\W*(its|his|her|their|sein[e]?|ihr[e]?|il|elle|ils|elles|son|sa|ses|leur|lo|la|"
    r"su|sus|él|ella)\b|^\W*其", re.IGNORECASE)
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
    bigrams: frozenset[tuple[str, str]] = frozenset()  # of consecutive content words
    # Yes / no fields of a structured passage: the key's token keys, and the value.
    fields: tuple[tuple[tuple[str, ...], bool], ...] = ()
    numbers: tuple[float, ...] = ()  # the values of its plain numbers
    clock: frozenset[int] = frozenset()  # the whole numbers in its times, ranges, dates
    flat: str = ""  # all of it, case, accents and spacing folded: for verbatim spans
    abbreviations: frozenset[str] = frozenset()  # keys of its "US", "U.S.", "UNHCR"

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.sentences]


def opens_with_pronoun(text: str) -> bool:
    """Whether the sentence's subject is a pronoun ("It lasts two years.")."""
    return bool(_SUBJECT_PRONOUN.search(text))


def refers_back(text: str) -> bool:
    """Whether the sentence opens on a word that refers to something named before it
    ("It lasts two years.", "Its founder, ...")."""
    return opens_with_pronoun(text) or bool(_REFERS_BACK.search(text))


def build_evidence(contexts: Sequence[str]) -> Evidence:
    sentences: list[ContextSentence] = []
    every: list[Token] = []
    for passage in contexts:
        previous_names: tuple[Token, ...] = ()
        for text in split_sentences(passage):
            tokens = tuple(content_tokens(text))
            continues = opens_with_pronoun(text) and bool(previous_names)
            referred = previous_names if continues else ()
            refers_back = bool(previous_names) and (
                continues or bool(_REFERS_BACK.search(text)))
            held = (*spelled_out(tokens), *initialisms(text))
            sentences.append(ContextSentence(text, tokens,
                                             Vocabulary(tokens + held + referred),
                                             continues, refers_back))
            names = tuple(t for t in tokens if t.kind is Kind.NAME or t.text[:1].isupper())
            previous_names = names or previous_names
            every.extend(tokens + held)
    bigrams: set[tuple[str, str]] = set()
    for sentence in sentences:
        bigrams.update(itertools.pairwise(plain_words(sentence.text)))
    fields = []
    for sentence in sentences:
        field = yes_no_field(sentence.text)
        if field is not None and (keys := tuple(t.key for t in content_tokens(field[0]))):
            fields.append((keys, field[1]))
    vocabulary = Vocabulary(every)
    number_keys = [k for k in vocabulary.keys if k[:1].isdigit() or k[:1] == "-"]
    return Evidence(tuple(sentences), vocabulary, frozenset(bigrams), tuple(fields),
                    tuple(v for v in map(value, number_keys) if v is not None),
                    frozenset(p for k in number_keys if k[:1].isdigit() for p in parts(k)),
                    folded("\n".join(contexts)),
                    frozenset(t.key for s in sentences for t in s.tokens
                              if is_abbreviation(t.text)))



def folded(text: str) -> str:
    """Case, accents and spacing folded: two texts that differ only in those match."""
    return " ".join(fold_accents(normalise(text)).split())


_PLAIN = re.compile(r"[\u3400-\u9fff]|[^\W_]+")


def plain_words(text: str) -> list[str]:
    """Content words as written, case folded, no stemming (CJK: characters): the
    exact wording an answer copies or departs from."""
    return [w for w in (m.group(0).casefold() for m in _PLAIN.finditer(text))
            if w not in STOPWORDS]


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
