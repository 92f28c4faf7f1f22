"""LlamaIndex capture on llama-index-core's instrumentation API (dispatcher span and
event handlers), producing the same spans as the LangChain collector.

    from ragas_trace.collectors import llamaindex
    llamaindex.instrument()                      # every engine in the process
    llamaindex.instrument(engines=[query_engine])  # or just one
"""

try:
    import llama_index.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "ragas_trace.collectors.llamaindex needs llama-index-core: "
        "pip install 'ragas-trace[llamaindex]'"
    ) from exc

from ragas_trace.collectors.llamaindex._instrument import (
    Instrumentation,
    instrument,
    uninstrument,
)

__all__ = ["Instrumentation", "instrument", "uninstrument"]
