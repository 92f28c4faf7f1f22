"""A LangChain RAG app under ``setup(metrics_port=...)`` scraped every second by a real
Prometheus (Debian's, exemplar storage on), the shipped rules loaded:

- the first burst after a start is counted by the recording rules (the series exist
  at zero before the first score);
- the score histograms carry exemplars Prometheus stores: the trace ids of the scored
  requests, the failing ones in the low buckets; the series carry the answering
  model's name;
- the fail share rule (time-compressed 60x by the harness, thresholds as shipped)
  fires for an app inventing one answer in five and stays silent for a healthy one.

The app runs in the test's process, with a judge that fails an answer not found in
its passages (the invented ones) so that hundreds of requests score in seconds."""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import pytest
import yaml
from langchain_core.callbacks import CallbackManagerForLLMRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnablePassthrough
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import ragas_trace
from ragas_trace.exporters import metrics as scorer_metrics
from ragas_trace.results import ALL_METRICS, Metric, MetricResult, Scores

sys.path.insert(0, str(Path(__file__).parents[1] / "demo"))
from prometheus_harness import Prometheus, running_prometheus, scale_rules

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "rules" / \
    "ragas-alerts.yml"
MODEL = "fake-rag-1"
PASSAGE = "Paris is the capital of France."
INVENTED = "Paris has ninety million inhabitants."
TIME_SCALE = 60  # 15m -> 15 s, 1h -> 60 s, 2h -> 120 s, for: 1m -> 1 s

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("prometheus") is None,
                       reason="prometheus not installed (apt-get install prometheus)"),
]


class Passages(BaseRetriever):
    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=PASSAGE), Document(page_content=f"About: {query}")]


class InventingChatModel(BaseChatModel):
    """Answers from the passage, but every ``invent_every``-th answer states a fact no
    passage holds (0: never)."""

    invent_every: int = 0
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "inventing"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_model_name"] = MODEL
        return params

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        invent = self.invent_every and self.calls % self.invent_every == 0
        text = INVENTED if invent else PASSAGE
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


class PassageJudge:
    """Faithfulness 1.0 when the answer is found in the passages, else 0.0."""

    name = "passage-judge"
    thresholds: ClassVar[dict[str, float]] = {
        "faithfulness": 0.5, "answer_relevance": 0.5, "context_relevance": 0.5}

    async def evaluate(self, question: str | None, contexts: Sequence[str], answer: str | None,
                       metrics: frozenset[Metric] = ALL_METRICS) -> Scores:
        grounded = answer is not None and any(answer.strip() in c for c in contexts)
        values = {Metric.FAITHFULNESS: 1.0 if grounded else 0.0}
        return Scores(self.name, {m: MetricResult.scored(values.get(m, 0.9)) for m in metrics})

    async def aclose(self) -> None:
        pass


def chain(model: BaseChatModel) -> Runnable[Any, str]:
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    return ({"context": Passages() | (lambda docs: "\n".join(d.page_content for d in docs)),
             "question": RunnablePassthrough()} | prompt | model | StrOutputParser())


@pytest.fixture
def app(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, InMemorySpanExporter]]:
    # A model's label after 3 s (its series scraped at zero by then) instead of 120 s.
    monkeypatch.setattr(scorer_metrics, "MODEL_LABEL_DELAY_S", 3.0)
    exporter = InMemorySpanExporter()
    rt = ragas_trace.setup(service_name="live", judge=PassageJudge(), metrics_port=0,
                           metrics_host="127.0.0.1", tracer_provider=TracerProvider(),
                           exporter=exporter, sample_rate=1.0, queue_size=5000,
                           max_held_spans=5000)
    try:
        yield rt, exporter
    finally:
        rt.shutdown(timeout_s=10)


def _wait(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def _value(prometheus: Prometheus, expr: str) -> float:
    result = prometheus.query(expr)
    return float(result[0]["value"][1]) if result else 0.0


def _roots(exporter: InMemorySpanExporter) -> dict[str, str]:
    """Trace id of each scored RAG root -> its answer (not the evaluation spans)."""
    return {f"{s.context.trace_id:032x}": str((s.attributes or {})["output.value"])
            for s in exporter.get_finished_spans()
            if (s.attributes or {}).get("ragas.evaluation.status") == "scored"
            and "output.value" in (s.attributes or {})}


def test_first_burst_counted_exemplars_stored_and_the_model_label(
        app: tuple[Any, InMemorySpanExporter], tmp_path: Path) -> None:
    rt, exporter = app
    handler = rt.langchain_handler(app_name="shop")
    rag = chain(InventingChatModel(invent_every=4))
    rules = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    with running_prometheus(tmp_path, rules, {"app": rt.metrics_port},
                            features=("exemplar-storage",)) as prometheus:
        # The app's series exist at zero before its first request.
        _wait("the zero series scraped", lambda: prometheus.query(
            'ragas_faithfulness_count{app="shop"} == 0'), 30)
        burst = 200
        for i in range(burst):
            rag.invoke(f"question {i}", config={"callbacks": [handler]})
        assert rt.force_flush(timeout_s=30)
        window = 'sum(ragas:faithfulness_count:5m{app="shop"})'
        _wait("the burst counted", lambda: _value(prometheus, window) >= 0.9 * burst, 30)
        # increase() extrapolates a window's few samples to its end (x1.95 with two a
        # second apart); ten scrapes later it reads the burst within 10 %.
        time.sleep(10)
        assert 0.9 * burst <= _value(prometheus, window) <= 1.1 * burst
        # Paced slower than the scrapes: every request's exemplar reaches Prometheus.
        start = time.time()
        exporter.clear()
        for i in range(8):
            rag.invoke(f"paced {i}", config={"callbacks": [handler]})
            time.sleep(2.0)
        assert rt.force_flush(timeout_s=30)
        roots = _roots(exporter)
        failing = {t for t, answer in roots.items() if answer == INVENTED}
        assert len(roots) == 8 and len(failing) == 2

        def exemplars() -> dict[str, set[str]]:
            query = quote('ragas_faithfulness_bucket{app="shop"}')
            data = prometheus.get(f"/api/v1/query_exemplars?query={query}"
                                  f"&start={start - 1}&end={time.time() + 1}")["data"]
            by_le: dict[str, set[str]] = {}
            for series in data:
                le = series["seriesLabels"]["le"]
                by_le.setdefault(le, set()).update(e["labels"]["trace_id"]
                                                   for e in series["exemplars"])
            return by_le

        by_le = _wait("every paced request's exemplar", lambda: (
            found if set().union(*(found := exemplars()).values()) >= set(roots) else None), 20)
        # The scored requests' trace ids; the failing ones, and only they, in the buckets
        # at or below 0.5.
        assert set().union(*by_le.values()) == set(roots)
        assert set().union(*(ids for le, ids in by_le.items() if float(le) <= 0.5)) == failing
        # The series carry the answering model's name.
        assert prometheus.query(f'ragas_faithfulness_count{{app="shop",model="{MODEL}"}} > 0')
    request = urllib.request.Request(f"http://127.0.0.1:{rt.metrics_port}/metrics",
                                     headers={"Accept": "application/openmetrics-text"})
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
    assert any(line.startswith("ragas_faithfulness_bucket{") and f'model="{MODEL}"' in line
               and re.search(r' # \{[^}]*trace_id="[0-9a-f]{32}"', line)
               for line in text.splitlines())


def test_the_fail_share_rule_pages_an_inventing_app_and_not_a_healthy_one(
        app: tuple[Any, InMemorySpanExporter], tmp_path: Path) -> None:
    rt, _ = app
    apps = {"inventing": chain(InventingChatModel(invent_every=5)),
            "healthy": chain(InventingChatModel(invent_every=0))}
    handlers = {name: rt.langchain_handler(app_name=name) for name in apps}
    rules = scale_rules(yaml.safe_load(RULES.read_text(encoding="utf-8")), TIME_SCALE)
    stop = threading.Event()

    def traffic() -> None:
        i = 0
        while not stop.is_set():
            for name, rag in apps.items():
                rag.invoke(f"question {i}", config={"callbacks": [handlers[name]]})
            i += 1
            time.sleep(0.04)  # about 20 requests a second per app

    with running_prometheus(tmp_path, rules, {"app": rt.metrics_port}) as prometheus:
        _wait("the zero series scraped", lambda: prometheus.query(
            'ragas_verdicts_total{app="inventing",label="fail"} == 0'), 30)
        started = time.monotonic()
        sender = threading.Thread(target=traffic, daemon=True)
        sender.start()
        try:
            firing = _wait("the inventing app paged", lambda: [
                a for a in prometheus.alerts() if a["labels"]["alertname"] ==
                "RagasFaithfulnessFailRate" and a["state"] == "firing"], 150)
            fired_after_s = time.monotonic() - started
            healthy = [a for a in prometheus.alerts()
                       if a["labels"].get("app") == "healthy"]
            share = _value(prometheus, 'ragas:faithfulness_fail_share:1h{app="inventing"}')
        finally:
            stop.set()
            sender.join(timeout=10)
    assert [a["labels"]["app"] for a in firing] == ["inventing"]
    # Within the rule's longest window (2 hours, 120 s here) of the first request.
    assert fired_after_s < 120 + 15
    assert healthy == []
    assert 0.17 < share < 0.23
    assert "traces_jaeger" in firing[0]["annotations"]
    assert "service=live" in firing[0]["annotations"]["traces_jaeger"]
