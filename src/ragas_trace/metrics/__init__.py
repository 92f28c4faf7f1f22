"""The paper's metric arithmetic, independent of the judge that supplies statements,
verdicts, questions, embeddings and kept sentences."""

from ragas_trace.metrics.answer_relevance import answer_relevance, cosine
from ragas_trace.metrics.context_relevance import (
    ContextMatch,
    context_relevance,
    context_sentences,
    match_sentences,
    passage_sentences,
)
from ragas_trace.metrics.faithfulness import faithfulness
from ragas_trace.metrics.sentences import split_sentences

__all__ = [
    "ContextMatch",
    "answer_relevance",
    "context_relevance",
    "context_sentences",
    "cosine",
    "faithfulness",
    "match_sentences",
    "passage_sentences",
    "split_sentences",
]
