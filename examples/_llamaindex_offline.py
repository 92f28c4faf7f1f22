"""Offline stand-ins shared by the LlamaIndex agent and workflow examples (not an
example itself): a bag-of-words embedding and an extractive model over three short
passages about pets, and the printing of a request's scores. Swap in your own
``embed_model`` and ``llm``, nothing else changes."""

from __future__ import annotations

import re
import zlib
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

DOCUMENTS = [
    "Cats like boxes because enclosed spaces feel safe and warm.",
    "Dogs need a daily walk; most breeds enjoy at least an hour outside.",
    "Goldfish can live for more than ten years in a well-kept tank.",
]


class WordsEmbedding(BaseEmbedding):
    """Hashed bag of words: enough for the right passage to come first, offline."""

    def _get_text_embedding(self, text: str) -> list[float]:
        vector = [0.0] * 64
        for word in re.findall(r"[a-z]+", text.lower()):
            vector[zlib.crc32(word.rstrip("s").encode()) % 64] += 1.0
        return vector

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def build_index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents([Document(text=text) for text in DOCUMENTS],
                                           embed_model=WordsEmbedding())


class ExtractiveLLM(CustomLLM):
    """Answers with the first passage of the prompt's context block (no network)."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="extractive-demo")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        context = prompt.split("---------------------\n")[1] if "-----" in prompt else prompt
        return CompletionResponse(text=context.strip().split("\n")[0])

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        yield self.complete(prompt)


def print_scores(spans: InMemorySpanExporter) -> None:
    """The request's root span and its scores; the linked evaluation span (kind
    EVALUATOR, also parentless) carries them as events, not as ``ragas.*`` scores."""
    for span in spans.get_finished_spans():
        attrs = span.attributes or {}
        if (span.parent is None and "ragas.evaluation.status" in attrs
                and attrs.get("openinference.span.kind") != "EVALUATOR"):
            print(f"{span.name}: status={attrs['ragas.evaluation.status']}")
            for metric in ("faithfulness", "answer_relevance", "context_relevance"):
                print(f"  {metric}: {attrs.get(f'ragas.{metric}')} "
                      f"({attrs.get(f'ragas.{metric}.label')})")
