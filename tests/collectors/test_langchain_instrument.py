"""The process-wide switch, and importing without langchain installed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from langchain_fakes import QUESTION, rag_chain, tracing_fixture  # noqa: F401 (fixture)

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import installed_handler, instrument, uninstrument
from ragas_trace.testing import InMemoryTracing


@pytest.fixture(autouse=True)
def _always_uninstrument() -> Iterator[None]:
    yield
    uninstrument()


def roots(tracing: InMemoryTracing) -> list[str]:
    return [s.attributes[sc.INPUT_VALUE] for s in tracing.spans()
            if s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN]


def test_instrument_traces_chains_called_without_callbacks(tracing: InMemoryTracing) -> None:
    handler = instrument(tracing.provider, app_name="global-app")
    assert installed_handler() is handler
    chain = rag_chain()

    chain.invoke("from the main thread")
    thread = threading.Thread(target=chain.invoke, args=("from a new thread",))
    thread.start()
    thread.join()
    asyncio.run(chain.ainvoke("from an event loop"))
    list(chain.stream("from a stream"))

    assert sorted(roots(tracing)) == sorted(
        ["from the main thread", "from a new thread", "from an event loop", "from a stream"])
    # Attached once per request, not once per nested run.
    assert len(tracing.spans()) == 4 * 3
    assert {s.attributes.get(sc.RAGAS_APP_NAME) for s in tracing.spans()} - {None} == {
        "global-app"}
    assert handler.open_runs == 0


def test_uninstrument_stops_tracing(tracing: InMemoryTracing) -> None:
    instrument(tracing.provider)
    rag_chain().invoke(QUESTION)
    uninstrument()
    rag_chain().invoke("after uninstrument")

    assert installed_handler() is None
    assert roots(tracing) == [QUESTION]


def test_instrument_again_replaces_the_handler(tracing: InMemoryTracing) -> None:
    other = InMemoryTracing()
    instrument(other.provider)
    instrument(tracing.provider)
    rag_chain().invoke(QUESTION)

    assert other.spans() == ()
    assert roots(tracing) == [QUESTION]


def test_ragas_trace_imports_without_langchain() -> None:
    # A fresh interpreter, so that nothing already imported hides a dependency.
    code = (
        "import sys\n"
        "sys.modules['langchain_core'] = None\n"
        "import ragas_trace\n"
        "try:\n"
        "    import ragas_trace.collectors.langchain\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True)

    assert "pip install 'ragas-trace[langchain]'" in result.stdout
