"""A LlamaIndex query engine traced and scored offline: ``setup()`` with the local
judge, ``llamaindex.instrument()``, one question, then the scores on the root span.
The README's quick start is the part between the QUICK START markers, so it runs as
pasted.

    pip install -e '.[llamaindex,local]'   # in a clone of this repository
    python examples/llamaindex_query_engine.py

Real model: change the `index = ...` line (your embedding model as `embed_model`, or
none for LlamaIndex's default) and the `engine = ...` line (your `llm`, or none for
the default); nothing else changes.
"""

# BEGIN QUICK START
from typing import Any

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CompletionResponse, MockLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.collectors import llamaindex

spans = InMemorySpanExporter()  # to print the scores below; leave it out to export over OTLP
rt = ragas_trace.setup(service_name="support-bot", exporter=spans)
llamaindex.instrument(rt.tracer_provider)  # every query and chat engine in the process


class CannedLLM(MockLLM):  # one fixed answer, offline
    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text="The Pro and Team plans include phone support.")


texts = ["The Pro and Team plans include phone support.",
         "The Free plan includes email support only."]
index = VectorStoreIndex.from_documents([Document(text=t) for t in texts],
                                        embed_model=MockEmbedding(embed_dim=8))
engine = index.as_query_engine(llm=CannedLLM(), similarity_top_k=2)
print("answer:", engine.query("Which plans include phone support?"))

rt.force_flush()  # waits for the background scorer (at most 30 s)
for span in spans.get_finished_spans():
    if span.attributes.get("openinference.span.kind") == "CHAIN":  # the request's root span
        print(span.name, {key: span.attributes.get(f"ragas.{key}") for key in (
            "evaluation.status", "faithfulness", "answer_relevance", "context_relevance")})
rt.shutdown()  # scores what is still held, flushes; also registered at exit
# END QUICK START
