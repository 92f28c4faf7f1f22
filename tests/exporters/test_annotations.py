"""Annotation sinks through the processor's scored path, against a loopback server
that checks Phoenix's and Langfuse's published API contracts (no Langfuse server
can run here; the Phoenix contract is also checked against a real Phoenix in
test_phoenix_server.py)."""

from __future__ import annotations

import base64
import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from ragas_trace import semconv as sc
from ragas_trace.config import Settings
from ragas_trace.exporters.annotations import AnnotationSinks, annotation_names, backends
from ragas_trace.exporters.annotations.langfuse import LangfuseScores
from ragas_trace.exporters.annotations.phoenix import PhoenixAnnotations, base_url
from ragas_trace.exporters.annotations.queue import AnnotationQueue, SendError
from ragas_trace.exporters.annotations.scores import ScoreAnnotation
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.pipeline import annotation_sinks
from ragas_trace.setup import service_resource
from ragas_trace.testing.annotation_server import FakeAnnotationServer
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

THRESHOLDS = {"faithfulness": 0.7, "answer_relevance": 0.7, "context_relevance": 0.3}


class Counted:
    """ScorerMetrics over an in-memory reader; ``outcomes()`` of ragas.annotations."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.metrics = ScorerMetrics(MeterProvider(metric_readers=[self.reader]), "svc")

    def outcomes(self) -> dict[tuple[str, str], int]:
        out: Counter[tuple[str, str]] = Counter()
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    if metric.name == "ragas.annotations":
                        for p in metric.data.data_points:
                            out[(str(p.attributes["sink"]), str(p.attributes["outcome"]))] += (
                                int(p.value))
        return dict(out)


@pytest.fixture
def fake() -> Iterator[FakeAnnotationServer]:
    with FakeAnnotationServer(phoenix_api_key="px-key") as server:
        yield server


@pytest.fixture
def counted() -> Counted:
    return Counted()


def _sinks(backends_: Sequence[Any], counted: Counted, policy: ContentPolicy | None = None,
           **kwargs: Any) -> AnnotationSinks:
    return AnnotationSinks(backends_, counted.metrics, policy or ContentPolicy(), THRESHOLDS,
                           **kwargs)


def test_phoenix_gets_one_annotation_per_metric_on_the_scored_span(make_rig, fake, counted):
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(ScriptedJudge(0.6, name="local:minilm"), annotations=sinks,
                   metrics=counted.metrics, thresholds=THRESHOLDS)
    root_id = rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    items = fake.phoenix_annotations()
    assert fake.rejected == []
    assert {i["name"] for i in items} == {"faithfulness", "answer_relevance",
                                          "context_relevance"}
    assert {i["span_id"] for i in items} == {f"{root_id:016x}"}
    by_name = {i["name"]: i for i in items}
    assert by_name["faithfulness"]["result"] == {
        "score": 0.6, "label": "fail", "explanation": "unsupported: s2"}
    assert by_name["context_relevance"]["result"]["label"] == "pass"
    assert {i["annotator_kind"] for i in items} == {"CODE"}  # the local judge
    assert {i["identifier"] for i in items} == {"ragas-trace"}
    (root,) = rig.named("rag")
    assert by_name["faithfulness"]["metadata"]["trace_id"] == f"{root.context.trace_id:032x}"
    assert fake.received[0].headers["authorization"] == "Bearer px-key"
    assert counted.outcomes() == {("phoenix", "sent"): 3}


def test_an_llm_judge_is_an_llm_annotator_and_content_policy_guards_the_explanation(
        make_rig, fake, counted):
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted, ContentPolicy("drop"))
    rig = make_rig(ScriptedJudge(name="openai:gpt-4o-mini"), annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    by_name = {i["name"]: i for i in fake.phoenix_annotations()}
    assert by_name["faithfulness"]["annotator_kind"] == "LLM"
    # The statement comes from the answer: with content dropped only the counts leave.
    assert by_name["faithfulness"]["result"]["explanation"] == (
        "1 of 2 statements supported by the context")


def test_unscored_requests_get_no_annotations(make_rig, fake, counted):
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(ScriptedJudge(mode="fail"), annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert fake.received == [] and counted.outcomes() == {}


def test_langfuse_scores_follow_its_api_contract(make_rig, fake, counted):
    sinks = _sinks([LangfuseScores(fake.url + "/", "pk-test", "sk-test")], counted)
    rig = make_rig(ScriptedJudge(0.8), annotations=sinks, thresholds=THRESHOLDS)
    root_id = rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert fake.rejected == []
    scores = fake.langfuse_scores()
    assert len(scores) == 3
    (root,) = rig.named("rag")
    token = scores[0].headers["authorization"].removeprefix("Basic ")
    assert base64.b64decode(token).decode() == "pk-test:sk-test"
    bodies = {r.body["name"]: r.body for r in scores}
    faithfulness = bodies["faithfulness"]
    assert faithfulness["traceId"] == f"{root.context.trace_id:032x}"
    assert faithfulness["observationId"] == f"{root_id:016x}"
    assert (faithfulness["value"], faithfulness["dataType"]) == (0.8, "NUMERIC")
    assert faithfulness["comment"] == "unsupported: s2"
    assert faithfulness["metadata"]["label"] == "pass"
    assert len({b["id"] for b in bodies.values()}) == 3  # an upsert key per metric
    assert counted.outcomes() == {("langfuse", "sent"): 3}


def test_wrong_langfuse_keys_are_refused_and_counted_failed(make_rig, fake, counted):
    sinks = _sinks([LangfuseScores(fake.url, "pk-test", "wrong")], counted)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert [status for _, status, _ in fake.rejected] == [401]
    assert counted.outcomes() == {("langfuse", "failed"): 3}
    assert rig.named("rag")[0].attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"


def test_a_transient_failure_is_retried(make_rig, fake, counted):
    fake.fail_next(503, times=2)
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(20_000)
    assert len(fake.phoenix_annotations()) == 3
    assert counted.outcomes() == {("phoenix", "sent"): 3}


def test_an_unreachable_backend_is_counted_failed_and_never_reaches_the_app(
        make_rig, counted):
    sinks = _sinks([PhoenixAnnotations("http://127.0.0.1:9")], counted, retry_for_s=0.0)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert counted.outcomes() == {("phoenix", "failed"): 3}
    assert rig.named("rag")[0].attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"


class Gated:
    """A backend that holds every send until ``gate`` is set."""

    name = "gated"

    def __init__(self, fail: Callable[[], SendError] | None = None) -> None:
        self.gate = threading.Event()
        self.sent: list[ScoreAnnotation] = []
        self.fail = fail

    def keep(self, annotation: ScoreAnnotation) -> bool:
        return True

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float) -> None:
        self.gate.wait(timeout_s)
        if self.fail is not None:
            raise self.fail()
        self.sent.extend(batch)


def _annotation(i: int) -> ScoreAnnotation:
    return ScoreAnnotation(f"{i:032x}", f"{i:016x}", "faithfulness", 1.0, "pass", "", "CODE",
                           "local", 0.7)


def test_a_full_queue_drops_and_counts_without_blocking(counted):
    backend = Gated()
    queue = AnnotationQueue(backend, counted.metrics, max_queued=2, max_batch=1)
    queue.offer([_annotation(0)])  # taken by the worker, which then waits on the gate
    offered = threading.Thread(target=lambda: [queue.offer([_annotation(i)])
                                               for i in range(1, 6)])
    offered.start()
    offered.join(5.0)
    assert not offered.is_alive()  # offer never waits for the backend
    backend.gate.set()
    assert queue.force_flush(10.0)
    outcomes = counted.outcomes()
    assert outcomes[("gated", "dropped")] >= 2
    assert outcomes[("gated", "sent")] + outcomes[("gated", "dropped")] == 6
    assert queue.shutdown(5.0)


def test_shutdown_keeps_its_deadline_while_the_backend_keeps_failing(counted):
    backend = Gated(lambda: SendError("down", retry=True))
    backend.gate.set()
    queue = AnnotationQueue(backend, counted.metrics, max_batch=1, retry_for_s=3600)
    queue.offer([_annotation(i) for i in range(3)])
    stopping = threading.Thread(target=queue.shutdown, args=(0.5,))
    stopping.start()
    stopping.join(10.0)  # not the hour of retries
    assert not stopping.is_alive()
    outcomes = counted.outcomes()
    assert sum(outcomes.values()) == 3  # each one counted, none lost silently
    queue.offer([_annotation(9)])
    assert counted.outcomes()[("gated", "dropped")] >= 1


def test_annotations_setting_parses_a_comma_list(caplog):
    assert annotation_names("Phoenix, langfuse,phoenix") == ("phoenix", "langfuse")
    assert annotation_names("") == () and annotation_names("none") == ()
    with pytest.raises(ValueError, match="phoenix, langfuse"):
        annotation_names("jaeger")
    with pytest.raises(ValueError, match="'annotations'"):
        Settings.load(env={}, annotations="jaeger")
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        assert Settings.load(env={"RAGAS_TRACE_ANNOTATIONS": "jaeger"}).annotations == ()
    assert "RAGAS_TRACE_ANNOTATIONS" in caplog.text


def test_serve_takes_the_annotations_option():
    from ragas_trace.gateway.settings import GatewaySettings

    assert GatewaySettings.load({"annotations": "phoenix,langfuse"}, env={}).annotations == (
        "phoenix", "langfuse")
    assert GatewaySettings.load({}, env={"RAGAS_TRACE_ANNOTATIONS": "phoenix"}).annotations == (
        "phoenix",)
    with pytest.raises(ValueError, match="--annotations"):
        GatewaySettings.load({"annotations": "tempo"}, env={})


def test_sinks_come_from_phoenix_and_langfuse_variables(caplog, counted):
    env = {"RAGAS_TRACE_ANNOTATIONS": "phoenix,langfuse",
           "PHOENIX_COLLECTOR_ENDPOINT": "http://px:6006/v1/traces", "PHOENIX_API_KEY": "k",
           "LANGFUSE_HOST": "http://lf:3000", "LANGFUSE_PUBLIC_KEY": "pk",
           "LANGFUSE_SECRET_KEY": "sk"}
    sinks = annotation_sinks(Settings.load(env=env), counted.metrics, ContentPolicy())
    assert sinks is not None and sinks.names == ["phoenix", "langfuse"]
    assert annotation_sinks(Settings.load(env={}), counted.metrics, ContentPolicy()) is None
    assert base_url("http://px:6006/v1/traces") == "http://px:6006"
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        chosen = backends(("langfuse",), phoenix_endpoint="", phoenix_api_key=None,
                          langfuse_host="http://lf", langfuse_public_key="pk",
                          langfuse_secret_key=None)
    assert chosen == [] and "LANGFUSE_SECRET_KEY" in caplog.text


def test_project_follows_the_service_unless_already_chosen(monkeypatch):
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    routed = service_resource("support-bot", project_from_service=True)
    assert routed.attributes[sc.OPENINFERENCE_PROJECT_NAME] == "support-bot"
    assert sc.OPENINFERENCE_PROJECT_NAME not in service_resource("support-bot").attributes
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "openinference.project.name=mine")
    kept = service_resource("support-bot", project_from_service=True)
    assert kept.attributes[sc.OPENINFERENCE_PROJECT_NAME] == "mine"


def test_sinks_shut_down_together_within_one_deadline(make_rig, counted):
    failing = [Gated(lambda: SendError("down", retry=True)) for _ in range(2)]
    for backend, name in zip(failing, ("one", "two"), strict=True):
        backend.gate.set()
        backend.name = name
    sinks = _sinks(failing, counted, retry_for_s=3600)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.wait(lambda spans: any(s.name == "rag" for s in spans))
    stopping = threading.Thread(target=sinks.shutdown, args=(1.0,))
    stopping.start()
    stopping.join(10.0)
    assert not stopping.is_alive()
    outcomes = counted.outcomes()
    for name in ("one", "two"):  # the second was not starved by the first
        assert sum(n for (sink, _), n in outcomes.items() if sink == name) == 3
