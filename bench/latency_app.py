"""The app bench/app_latency.py serves: FastAPI, ``POST /ask`` answering with an LCEL
RAG chain (a retriever of four passages, a prompt, a fake chat model that invents a
fact in one answer in five), so every request is a RAG trace the judge can score.

``LATENCY_ARM`` picks what the process does about ragas-trace:

- ``none``: the package is never imported (the baseline);
- ``sidecar``: ``setup(judge="off")``: spans are exported over OTLP
  (``OTEL_EXPORTER_OTLP_ENDPOINT``) to a ``ragas-trace serve`` sidecar that scores them;
- ``export-only``: ``setup(judge="off")`` exporting to the next hop, nothing scored
  anywhere: what tracing and exporting alone cost the app;
- ``lower-bound``: ``setup(judge="off")`` exporting to the next hop like ``export-only``,
  but the handler only maps runs to their request and, when the root run ends, makes
  the same three spans (names and attributes of one request, built in advance)
  through the SDK: what any handler making these spans with the OpenTelemetry SDK
  and exporting them over OTLP costs the app at least;
- ``inprocess``: ``setup()`` with the local judge in this process (each worker);
- ``inprocess-idle``: the same, the judge's threads (the scorer's, and the native
  threads of onnxruntime and BLAS) moved to ``SCHED_IDLE`` as they appear, the app's
  (the event loop's, its executor's, the span exporter's) left as they are: what
  idle priority can do for a judge that shares the app's GIL.

Passages and answers differ from request to request (built from the question's
number), so the judge's caches do not make its work cheaper than real traffic's.

    python -m gunicorn latency_app:app --chdir bench -k uvicorn.workers.UvicornWorker -w 4
    python -m uvicorn latency_app:app --app-dir bench
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from fastapi import FastAPI
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from pydantic import BaseModel

ARM = os.environ.get("LATENCY_ARM", "none")
_PLACES = ("Lyon", "Porto", "Ghent", "Turku", "Graz", "Split", "Brno", "Cork", "Bergen",
           "Malmo", "Tartu", "Kaunas", "Bilbao", "Aarhus", "Padua", "Leiden")
_THINGS = ("bridge", "library", "cathedral", "museum", "harbour", "university", "market",
           "observatory", "theatre", "tower")


def _facts(n: int) -> list[str]:
    place = _PLACES[n % len(_PLACES)]
    thing = _THINGS[(n // len(_PLACES)) % len(_THINGS)]
    year = 1500 + (n * 37) % 480
    return [f"The {thing} of {place} was built in {year} by the city guild.",
            f"It was restored in {year + 211} after a fire damaged its east side.",
            f"Visitors to the {thing} numbered {1000 + n % 9000} last spring.",
            f"{place} lies on a river and has about {50 + n % 400} thousand inhabitants."]


class Passages(BaseRetriever):
    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        n = int(query.rsplit("#", 1)[-1]) if "#" in query else 0
        return [Document(page_content=text, id=f"doc-{n}-{i}", metadata={"rank": i})
                for i, text in enumerate(_facts(n))]


class FakeChat(BaseChatModel):
    """Answers from the passages; one answer in five adds a fact they do not hold."""

    @property
    def _llm_type(self) -> str:
        return "fake-chat"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = messages[-1].text
        n = int(prompt.rsplit("#", 1)[-1]) if "#" in prompt else 0
        facts = _facts(n)
        answer = f"{facts[0]} {facts[1]}"
        if n % 5 == 0:
            answer += " It was designed by the architect Jan Hollander."
        usage = {"input_tokens": 90, "output_tokens": 30, "total_tokens": 120}
        return ChatResult(generations=[ChatGeneration(
            message=AIMessage(content=answer, usage_metadata=usage))])


def _chain() -> Any:
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    docs = Passages() | (lambda ds: "\n".join(d.page_content for d in ds))
    return {"context": docs, "question": RunnablePassthrough()} | prompt | FakeChat() \
        | StrOutputParser()


def _judge_threads_to_idle() -> None:
    while True:
        app_threads = {t.native_id for t in threading.enumerate()
                       if not t.name.startswith("ragas")}
        for tid in map(int, os.listdir("/proc/self/task")):
            if tid not in app_threads:
                try:
                    os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
                except OSError:
                    pass  # the thread ended meanwhile
        time.sleep(0.25)


class _LowerBound(BaseCallbackHandler):
    """Maps runs to their request (a dict, no lock) and, when the root run ends, makes
    ``spans`` (name, attributes; the root first) in one burst. Nothing is read from
    LangChain's objects."""

    run_inline = True  # as ragas-trace's handler: called on the run's own thread

    def __init__(self, tracer: Any, spans: list[tuple[str, dict[str, Any]]]) -> None:
        from opentelemetry import trace  # here: the baseline arm imports none of it

        self._tracer = tracer
        self._spans = spans
        self._in_context = trace.set_span_in_context
        self._runs: dict[Any, Any] = {}

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                       parent_run_id: Any = None, **kwargs: Any) -> None:
        self._runs[run_id] = parent_run_id

    on_retriever_start = on_chain_start
    on_chat_model_start = on_chain_start

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        if self._runs.pop(run_id, None) is None:
            (root_name, root_attrs), *children = self._spans
            root = self._tracer.start_span(root_name, attributes=root_attrs)
            ctx = self._in_context(root)
            for name, attrs in children:
                self._tracer.start_span(name, ctx, attributes=attrs).end()
            root.end()

    def on_retriever_end(self, documents: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)

    def on_llm_end(self, response: Any, *, run_id: Any, **kwargs: Any) -> None:
        self._runs.pop(run_id, None)


def _lower_bound(provider: Any) -> _LowerBound:
    """The handler of the ``lower-bound`` arm, with the spans ragas-trace's handler
    makes for one request of this app, captured once."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragas_trace.collectors.langchain import RagasCallbackHandler

    memory = InMemorySpanExporter()
    capture = TracerProvider()
    capture.add_span_processor(SimpleSpanProcessor(memory))
    handler = RagasCallbackHandler(capture, app_name="latency-bench")
    chain.invoke("When was it built? #7", config={"callbacks": [handler]})
    finished = sorted(memory.get_finished_spans(), key=lambda s: s.parent is not None)
    spans = [(s.name, dict(s.attributes or {})) for s in finished]
    return _LowerBound(provider.get_tracer("latency-bench"), spans)


chain = _chain()
callbacks: list[Any] = []
if ARM != "none":
    import ragas_trace

    off = ARM in ("sidecar", "export-only", "lower-bound")
    rt = ragas_trace.setup(service_name="latency-bench", judge="off" if off else "local",
                           exporter="otlp")
    callbacks = [_lower_bound(rt.tracer_provider) if ARM == "lower-bound"
                 else rt.langchain_handler(app_name="latency-bench")]
if ARM == "inprocess-idle":
    threading.Thread(target=_judge_threads_to_idle, name="bench-idle", daemon=True).start()

app = FastAPI()


class Ask(BaseModel):
    question: str


@app.post("/ask")
async def ask(body: Ask) -> dict[str, str]:
    answer = await chain.ainvoke(body.question, config={"callbacks": callbacks})
    return {"answer": answer}
