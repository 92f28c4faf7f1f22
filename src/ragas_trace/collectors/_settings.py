"""Collector settings as one table (mechanism and precedence in
``ragas_trace._settings``). The names are shared by every collector so that one
environment variable tunes LangChain and LlamaIndex capture alike."""

from __future__ import annotations

import os
from typing import Any

from ragas_trace._settings import Setting, boolean, integer, number, resolve

MAX_DOCUMENTS = Setting("max_documents", "RAGAS_TRACE_MAX_DOCUMENTS", 100, integer(0),
                        "passages recorded per retriever span")
RUN_TTL_S = Setting("run_ttl_s", "RAGAS_TRACE_RUN_TTL_S", 600.0, number(0.0),
                    "a run still open after this long is evicted")
MAX_OPEN_RUNS = Setting("max_open_runs", "RAGAS_TRACE_MAX_OPEN_RUNS", 10_000, integer(1),
                        "open runs kept at most; the oldest is evicted first")
CAPTURE_VECTOR_STORES = Setting(
    "capture_vector_stores", "RAGAS_TRACE_CAPTURE_VECTOR_STORES", True, boolean,
    "LangChain: record vector_store.similarity_search* calls made inside a traced run "
    "as retriever spans (wraps the VectorStore search methods)")


def setting(row: Setting, value: Any) -> Any:
    """``value`` if given, else the environment, else the default."""
    return resolve(row, value, os.environ)
