"""The retrieved context, prepared once per record: its sentences, their tokens, and
which names each sentence refers to."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragas_trace.judges.local.comparisons import Comparison, comparisons
from ragas_trace.judges.local.tokens import Kind, Token, Vocabulary, content_tokens
from ragas_trace.metrics.sentences import split_sentences

# A sentence that opens with a subject pronoun continues the previous sentence's
# subject ("Curie won ... . She shared ..."); a possessive opener ("His rival, Gray, ...")
# does not, since its subject is someone else.
_SUBJECT_PRONOUN = re.compile(
    r"^\W*(he|she|it|they|this|these|er|sie|es|dies|diese[rs]?)\b|^\W*[他她它]",
    re.IGNORECASE)


@dataclass(frozen=True)
class ContextSentence:
    text: str
    tokens: tuple[Token, ...]
    vocabulary: Vocabulary  # own tokens plus names a pronoun refers back to
    continues: bool = False  # opens with a pronoun for the previous sentence's subject


@dataclass(frozen=True)
class Evidence:
    sentences: tuple[ContextSentence, ...]
    vocabulary: Vocabulary  # the whole context
    comparisons: tuple[Comparison, ...] = ()

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.sentences]


def build_evidence(contexts: Sequence[str]) -> Evidence:
    sentences: list[ContextSentence] = []
    every: list[Token] = []
    compared: list[Comparison] = []
    for passage in contexts:
        compared += comparisons(passage)
        previous_names: tuple[Token, ...] = ()
        for text in split_sentences(passage):
            tokens = tuple(content_tokens(text))
            continues = bool(_SUBJECT_PRONOUN.search(text)) and bool(previous_names)
            referred = previous_names if continues else ()
            sentences.append(ContextSentence(text, tokens, Vocabulary(tokens + referred),
                                             continues))
            names = tuple(t for t in tokens if t.kind is Kind.NAME or t.text[:1].isupper())
            previous_names = names or previous_names
            every.extend(tokens)
    return Evidence(tuple(sentences), Vocabulary(every), tuple(compared))
