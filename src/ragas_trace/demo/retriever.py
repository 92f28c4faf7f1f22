"""An in-memory TF-IDF retriever: a real LangChain ``BaseRetriever`` over the demo
corpus, so the retrieval step is traced exactly like a vector store's would be."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr

from ragas_trace.demo.corpus import PASSAGES, Passage

_WORD = re.compile(r"[a-z0-9']+")
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from had has have how in is it its many "
    "much of on or since the their there this to was were what when where which who "
    "whom with".split()
)


def terms(text: str) -> list[str]:
    """Lower-cased content words, crudely stemmed so "arches" meets "arch" and
    "founded" meets "founding"."""
    words = (w.strip("'") for w in _WORD.findall(text.lower()))
    return [_stem(w) for w in words if w and w not in _STOPWORDS]


def _stem(word: str) -> str:
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 4 and word.endswith("es") and word[-3] in "sxh":
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


class TfidfRetriever(BaseRetriever):
    """Top-``k`` passages by cosine similarity of TF-IDF vectors."""

    k: int = 3
    _passages: tuple[Passage, ...] = PrivateAttr(default=PASSAGES)
    _idf: dict[str, float] = PrivateAttr(default_factory=dict)
    _vectors: list[dict[str, float]] = PrivateAttr(default_factory=list)

    def __init__(self, passages: Sequence[Passage] = PASSAGES, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        self._passages = tuple(passages)
        docs = [Counter(terms(f"{p.title} {p.text}")) for p in self._passages]
        n = len(docs)
        df = Counter(term for doc in docs for term in doc)
        self._idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
        self._vectors = [self._weigh(doc) for doc in docs]

    def _weigh(self, counts: Counter[str]) -> dict[str, float]:
        vec = {t: c * self._idf.get(t, 0.0) for t, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {t: v / norm for t, v in vec.items()}

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        q = self._weigh(Counter(terms(query)))
        scored = sorted(
            ((sum(w * vec.get(t, 0.0) for t, w in q.items()), i)
             for i, vec in enumerate(self._vectors)),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return [
            Document(
                page_content=self._passages[i].text,
                id=self._passages[i].id,
                metadata={"id": self._passages[i].id, "title": self._passages[i].title,
                          "score": round(score, 4)},
            )
            for score, i in scored[: self.k]
        ]
