"""The retrieved context, prepared once per record: its sentences, their tokens, and
which names each sentence refers to (a sentence with a pronoun also refers to the
names of the sentence before it: "Curie ... . She shared the 1903 prize ...")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragas_trace.judges.local.tokens import Kind, Token, Vocabulary, content_tokens
from ragas_trace.metrics.sentences import split_sentences

_PRONOUN = re.compile(
    r"\b(he|she|it|they|his|her|its|their|him|them|this|these|er|sie|es|sein|seine|ihr|ihre"
    r"|dies|diese)\b|[他她它其]", re.IGNORECASE)


@dataclass(frozen=True)
class ContextSentence:
    text: str
    tokens: tuple[Token, ...]
    vocabulary: Vocabulary  # own tokens plus names a pronoun refers back to


@dataclass(frozen=True)
class Evidence:
    sentences: tuple[ContextSentence, ...]
    vocabulary: Vocabulary  # the whole context

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
            referred = previous_names if _PRONOUN.search(text) else ()
            sentences.append(ContextSentence(text, tokens, Vocabulary(tokens + referred)))
            names = tuple(t for t in tokens if t.kind is Kind.NAME or t.text[:1].isupper())
            previous_names = names or previous_names
            every.extend(tokens)
    return Evidence(tuple(sentences), Vocabulary(every))
