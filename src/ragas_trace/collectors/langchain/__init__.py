"""LangChain capture: ``RagasCallbackHandler`` for one chain, ``instrument()`` for
every chain in the process.

    from ragas_trace.collectors.langchain import RagasCallbackHandler
    chain.invoke(question, config={"callbacks": [RagasCallbackHandler()]})
"""

try:
    import langchain_core  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "ragas_trace.collectors.langchain needs langchain-core: "
        "pip install 'ragas-trace[langchain]'"
    ) from exc

from ragas_trace.collectors.langchain._handler import RagasCallbackHandler
from ragas_trace.collectors.langchain._instrument import (
    installed_handler,
    instrument,
    uninstrument,
)

__all__ = ["RagasCallbackHandler", "installed_handler", "instrument", "uninstrument"]
