"""Annotation sinks through the processor's scored path, against a loopback server
that checks Phoenix's and Langfuse's published API contracts (no Langfuse server
can run here; the Phoenix contract is also checked against a real Phoenix in
test_phoenix_server.py)."""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ragas_trace import semconv as sc
from ragas_trace.config import Settings
from ragas_trace.exporters.annotations import AnnotationSinks, annotation_names, backends
from ragas_trace.exporters.annotations.langfuse import LangfuseScores
from ragas_trace.exporters.annotations.phoenix import PhoenixAnnotations, base_url
from ragas_trace.exporters.annotations.queue import AnnotationQueue, ItemFailure, SendError
from ragas_trace.exporters.annotations.scores import (
    ScoreAnnotation,
    passage_shares,
    score_annotations,
)
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.evaluation_span import explanation
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.processor import ScoringSpanProcessor
from ragas_trace.pipeline import annotation_sinks
from ragas_trace.results import DEFAULT_THRESHOLDS, Metric, MetricResult, MetricStatus, Scores
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome
from ragas_trace.setup import service_resource
from ragas_trace.testing.annotation_server import FakeAnnotationServer
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

THRESHOLDS = {"faithfulness": 0.7, "answer_relevance": 0.7, "context_relevance": 0.3}
METRICS = ("faithfulness", "answer_relevance", "context_relevance")


class GatedExporter(SpanExporter):
    """Exports (with ``result``) only once ``gate`` is set."""

    def __init__(self, gate: threading.Event,
                 result: SpanExportResult = SpanExportResult.SUCCESS) -> None:
        self.gate = gate
        self.result = result

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.gate.wait(10.0)
        return self.result


def _exporting_rig(exporter: SpanExporter, sinks: AnnotationSinks
                   ) -> tuple[ScoringSpanProcessor, TracerProvider]:
    """A processor exporting through its own export queue (as ``setup()`` builds it)."""
    processor = ScoringSpanProcessor(exporter, BackgroundScorer(ScriptedJudge(), timeout_s=5),
                                     annotations=sinks)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return processor, provider


def _iso(ns: int | None) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp((ns or 0) / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _finished_span() -> ReadableSpan:
    provider = TracerProvider()
    with provider.get_tracer("t").start_as_current_span("rag") as span:
        pass
    assert isinstance(span, ReadableSpan)
    return span


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


def test_phoenix_gets_span_and_trace_annotations_stored_synchronously(make_rig, fake, counted):
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(ScriptedJudge(0.6, name="local:minilm"), annotations=sinks,
                   metrics=counted.metrics, thresholds=THRESHOLDS)
    root_id = rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    items = fake.phoenix_annotations()
    assert fake.rejected == []
    assert {i["name"] for i in items} == set(METRICS)
    assert {i["span_id"] for i in items} == {f"{root_id:016x}"}
    by_name = {i["name"]: i for i in items}
    assert by_name["faithfulness"]["result"] == {
        "score": 0.6, "label": "fail", "explanation": "unsupported: s2"}
    assert by_name["context_relevance"]["result"]["label"] == "pass"
    assert {i["annotator_kind"] for i in items} == {"CODE"}  # the local judge
    assert {i["identifier"] for i in items} == {"ragas-trace"}
    (root,) = rig.named("rag")
    trace_id = f"{root.context.trace_id:032x}"
    assert by_name["faithfulness"]["metadata"]["trace_id"] == trace_id
    # The same scores on the trace, where Phoenix's trace views read them.
    traced = fake.phoenix_annotations("/v1/trace_annotations")
    assert {(i["trace_id"], i["name"], i["result"]["score"]) for i in traced} == {
        (trace_id, m, 0.6) for m in METRICS}
    # Synchronous: Phoenix answers once they are in its database.
    assert {tuple(r.query.get("sync", ())) for r in fake.received
            if r.path.endswith("_annotations")} == {("true",)}
    assert fake.received[0].headers["authorization"] == "Bearer px-key"
    assert counted.outcomes() == {("phoenix", "stored"): 6}


def test_annotation_configs_are_created_once_and_an_existing_one_is_kept(make_rig, fake,
                                                                         counted):
    fake.configs["faithfulness"] = {"name": "faithfulness", "type": "CONTINUOUS",
                                    "optimization_direction": "MINIMIZE", "id": "mine"}
    for _ in range(2):  # a second process (or restart) of the app finds them
        sinks = _sinks([PhoenixAnnotations(fake.url, "px-key", THRESHOLDS)], counted)
        rig = make_rig(annotations=sinks)
        rag_request(rig.tracer)
        rag_request(rig.tracer)
        assert rig.processor.force_flush(10_000)
    created = fake.requests("/v1/annotation_configs")
    assert sorted(r.body["name"] for r in created) == ["answer_relevance", "context_relevance"]
    assert fake.configs["faithfulness"]["optimization_direction"] == "MINIMIZE"  # untouched
    config = fake.configs["answer_relevance"]
    assert (config["type"], config["optimization_direction"], config["lower_bound"],
            config["upper_bound"]) == ("CONTINUOUS", "MAXIMIZE", 0.0, 1.0)
    assert "pass at >= 0.7" in config["description"]
    assert "pass at >= 0.3" in fake.configs["context_relevance"]["description"]
    assert fake.rejected == []


def test_a_key_that_may_not_create_configs_is_not_asked_again(make_rig, fake, counted,
                                                               caplog):
    fake.fail_next(403)  # the first lookup
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(annotations=sinks)
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        for _ in range(2):
            rag_request(rig.tracer)
            assert rig.processor.force_flush(10_000)
    assert "annotation config faithfulness not created" in caplog.text
    # One refused lookup, then the other two metrics' configs; no retry of the first.
    assert sorted(fake.configs) == ["answer_relevance", "context_relevance"]
    assert counted.outcomes() == {("phoenix", "stored"): 12}


def test_each_scored_passage_gets_a_document_annotation_on_its_retriever(make_rig, fake,
                                                                         counted):
    docs = ("Paris is the capital of France. It has 2 million people.",
            "The Eiffel Tower is in Paris.", "Berlin is in Germany.")
    judge = ScriptedJudge(0.5, keep=["Paris is the capital of France.",
                                     "The Eiffel Tower is in Paris."])
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(judge, annotations=sinks, thresholds=THRESHOLDS)
    rag_request(rig.tracer, docs=docs)
    assert rig.processor.force_flush(10_000)
    (retriever,) = rig.named("retriever")
    items = sorted(fake.phoenix_annotations("/v1/document_annotations"),
                   key=lambda i: i["document_position"])
    assert fake.rejected == []
    assert [(i["span_id"], i["document_position"], i["name"]) for i in items] == [
        (f"{retriever.context.span_id:016x}", p, "context_relevance") for p in range(3)]
    assert [i["result"]["score"] for i in items] == [0.5, 1.0, 0.0]
    assert [i["result"]["label"] for i in items] == ["relevant", "relevant", "irrelevant"]
    assert items[0]["result"]["explanation"] == "1 of 2 sentences needed to answer"
    assert all("identifier" not in i for i in items)  # Phoenix takes none here
    # Phoenix's retrieval metrics read LLM document annotations only.
    assert {(i["annotator_kind"], i["metadata"]["judge"]) for i in items} == {
        ("LLM", "scripted")}


def test_the_llm_judge_extracted_sentences_give_the_passage_verdicts(make_rig, fake, counted):
    from ragas_trace.judges.openai_judge import OpenAIJudge
    from ragas_trace.testing.openai_server import FakeOpenAIServer

    docs = ("Paris is the capital of France. It has 2 million people.",
            "Berlin is in Germany.")
    with FakeOpenAIServer() as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="sk-test")
        sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
        rig = make_rig(judge, timeout_s=10.0, annotations=sinks, thresholds=THRESHOLDS)
        rag_request(rig.tracer, docs=docs)
        assert rig.processor.force_flush(20_000)
        rig.processor.shutdown(5.0)
    (root,) = rig.named("rag")
    assert root.attributes[sc.RAGAS_CONTEXT_RELEVANCE] == pytest.approx(1 / 3)
    items = sorted(fake.phoenix_annotations("/v1/document_annotations"),
                   key=lambda i: i["document_position"])
    assert [(i["result"]["score"], i["result"]["label"]) for i in items] == [
        (0.5, "relevant"), (0.0, "irrelevant")]
    assert {i["metadata"]["judge"] for i in items} == {judge.name}


def test_passages_the_judge_did_not_score_get_no_verdict():
    contexts = ["A one. A two.", "B one."]
    assert passage_shares(contexts, ["A two.", "B one."], 3) == {
        "A one. A two.": (1, 2), "B one.": (1, 1)}
    # A duplicate kept sentence counts in one passage only.
    assert passage_shares(["X.", "X."], ["X."], 2) == {"X.": (1, 1)}
    # The judge's sentences are not these passages': no per-passage verdict made up.
    assert passage_shares(contexts, ["A two."], 5) is None
    assert passage_shares(contexts, [], 0) is None


def test_a_span_phoenix_does_not_have_yet_is_retried_and_the_rest_stored(fake, counted):
    queue = AnnotationQueue(PhoenixAnnotations(fake.url, "px-key"), counted.metrics,
                            retry_for_s=30.0)
    late, never = f"{2:016x}", f"{3:016x}"
    fake.missing.update({late, never})
    arrives = threading.Timer(1.0, fake.missing.discard, args=(late,))
    arrives.start()
    queue.offer([_annotation(1), _annotation(2)])
    assert queue.force_flush(20.0)
    arrives.join()
    assert [i["span_id"] for i in fake.phoenix_annotations()] == [f"{1:016x}", late]
    outcomes = counted.outcomes()
    assert outcomes[("phoenix", "stored")] == 2 and outcomes[("phoenix", "retried")] >= 1
    # One that never arrives is given up on after the retry window, and counted.
    short = AnnotationQueue(PhoenixAnnotations(fake.url, "px-key"), counted.metrics,
                            retry_for_s=1.0)
    short.offer([_annotation(3)])
    assert short.force_flush(20.0)
    assert counted.outcomes()[("phoenix", "lost")] == 1


def test_annotations_wait_for_their_span_to_be_exported(fake, counted):
    gate = threading.Event()
    exporter = GatedExporter(gate)
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    processor, provider = _exporting_rig(exporter, sinks)
    rag_request(provider.get_tracer("t"))
    assert processor.scorer.drain(10.0)
    time.sleep(0.3)  # the scored copy waits in the export queue
    assert fake.received == []  # nothing sent for a span the backend does not have
    gate.set()
    assert processor.force_flush(10_000)
    assert len(fake.phoenix_annotations()) == 3
    assert counted.outcomes() == {("phoenix", "stored"): 6}
    processor.shutdown(2.0)


def test_annotations_of_a_span_never_exported_are_counted_lost(fake, counted):
    exporter = GatedExporter(threading.Event(), result=SpanExportResult.FAILURE)
    exporter.gate.set()
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    processor, provider = _exporting_rig(exporter, sinks)
    rag_request(provider.get_tracer("t"))
    processor.force_flush(10_000)
    assert fake.received == []
    assert counted.outcomes() == {("phoenix", "lost"): 6}
    processor.shutdown(2.0)


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


def test_every_metric_and_status_has_an_explanation():
    scored = Scores("local", {Metric.ANSWER_RELEVANCE: MetricResult(
        0.8, MetricStatus.SCORED, "question-answer similarity 0.71; names: Paris")})
    result = scored.result(Metric.ANSWER_RELEVANCE)
    # Content-free (evaluation spans): never the judge's words about the answer.
    assert explanation(Metric.ANSWER_RELEVANCE, result, scored) == (
        "similarity of the answer to the question")
    span = _finished_span()
    outcome = Outcome(EvaluationStatus.SCORED, scores=scored)
    kept = {a.name: a.explanation for a in score_annotations(
        span, outcome, "local", THRESHOLDS, ContentPolicy())}
    assert kept["answer_relevance"] == "question-answer similarity 0.71; names: Paris"
    dropped = {a.name: a.explanation for a in score_annotations(
        span, outcome, "local", THRESHOLDS, ContentPolicy("drop"))}
    assert dropped["answer_relevance"] == "similarity of the answer to the question"
    for status in MetricStatus:
        if status is MetricStatus.SCORED:
            continue
        text = explanation(Metric.FAITHFULNESS, MetricResult.unscored(status),
                           Scores("local", {}))
        assert text.startswith(f"{status}: ") and len(text) > len(status) + 10


def test_unscored_requests_get_no_annotations(make_rig, fake, counted):
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(ScriptedJudge(mode="fail"), annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert fake.received == [] and counted.outcomes() == {}


def test_langfuse_scores_are_one_batch_of_score_events_per_its_api_contract(make_rig, fake,
                                                                          counted):
    sinks = _sinks([LangfuseScores(fake.url + "/", "pk-test", "sk-test")], counted)
    rig = make_rig(ScriptedJudge(0.8), annotations=sinks, thresholds=THRESHOLDS)
    root_id = rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert fake.rejected == [] and fake.item_errors == []
    (request,) = fake.requests("/api/public/ingestion")  # one batch, not one per score
    token = request.headers["authorization"].removeprefix("Basic ")
    assert base64.b64decode(token).decode() == "pk-test:sk-test"
    events = request.body["batch"]
    assert [e["type"] for e in events] == ["score-create"] * 3
    (root,) = rig.named("rag")
    bodies = {e["body"]["name"]: e["body"] for e in events}
    faithfulness = bodies["faithfulness"]
    assert faithfulness["traceId"] == f"{root.context.trace_id:032x}"
    assert faithfulness["observationId"] == f"{root_id:016x}"
    assert (faithfulness["value"], faithfulness["dataType"]) == (0.8, "NUMERIC")
    assert faithfulness["comment"] == "unsupported: s2"
    assert faithfulness["metadata"]["label"] == "pass"
    assert len({b["id"] for b in bodies.values()}) == 3  # an upsert key per metric
    # The event's time is the span's end: the same on every delivery of the score.
    assert {e["timestamp"] for e in events} == {_iso(root.end_time)}
    assert counted.outcomes() == {("langfuse", "stored"): 3}


def test_langfuse_207_is_counted_per_item(make_rig, fake, counted):
    fake.fail_items(400)  # refused: input error, inside a 207
    fake.fail_items(503)  # Langfuse busy for this one: retried
    sinks = _sinks([LangfuseScores(fake.url, "pk-test", "sk-test")], counted)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(20_000)
    assert [status for _, status in fake.item_errors] == [400, 503]
    assert counted.outcomes() == {("langfuse", "stored"): 2, ("langfuse", "refused"): 1,
                                  ("langfuse", "retried"): 1}
    # The retried score went out again under the same id and timestamp: one score.
    events = fake.langfuse_events()
    retried = next(e for e in events if e["id"] == fake.item_errors[1][0])["body"]["id"]
    again = [e for e in events if e["body"]["id"] == retried]
    assert len(again) == 2 and len({e["timestamp"] for e in again}) == 1
    assert len({e["id"] for e in again}) == 2  # a new envelope for each delivery
    assert len(fake.scores) == 2


def test_wrong_langfuse_keys_are_refused_and_counted(make_rig, fake, counted):
    sinks = _sinks([LangfuseScores(fake.url, "pk-test", "wrong")], counted)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert [status for _, status, _ in fake.rejected] == [401]
    assert counted.outcomes() == {("langfuse", "refused"): 3}
    assert rig.named("rag")[0].attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"


def test_a_transient_failure_is_retried(make_rig, fake, counted):
    fake.fail_next(503, times=2)
    sinks = _sinks([PhoenixAnnotations(fake.url, "px-key")], counted)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(20_000)
    assert len(fake.phoenix_annotations()) == 3
    outcomes = counted.outcomes()
    assert outcomes[("phoenix", "stored")] == 6 and outcomes[("phoenix", "retried")] >= 3


def test_an_unreachable_backend_is_counted_lost_and_never_reaches_the_app(
        make_rig, counted):
    sinks = _sinks([PhoenixAnnotations("http://127.0.0.1:9")], counted, retry_for_s=0.0)
    rig = make_rig(annotations=sinks)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    assert counted.outcomes() == {("phoenix", "lost"): 6}
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

    def send(self, batch: Sequence[ScoreAnnotation], timeout_s: float) -> list[ItemFailure]:
        self.gate.wait(timeout_s)
        if self.fail is not None:
            raise self.fail()
        self.sent.extend(batch)
        return []


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
    assert outcomes[("gated", "lost")] >= 2
    assert outcomes[("gated", "stored")] + outcomes[("gated", "lost")] == 6
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
    # Each one counted once as lost (re-sends aside), none lost silently.
    assert sum(n for (_, o), n in outcomes.items() if o != "retried") == 3
    queue.offer([_annotation(9)])
    assert counted.outcomes()[("gated", "lost")] >= 4


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
    sinks = annotation_sinks(Settings.load(env=env), counted.metrics, ContentPolicy(),
                             DEFAULT_THRESHOLDS)
    assert sinks is not None and sinks.names == ["phoenix", "langfuse"]
    assert annotation_sinks(Settings.load(env={}), counted.metrics, ContentPolicy(),
                            DEFAULT_THRESHOLDS) is None
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
        assert outcomes[(name, "lost")] == 6
