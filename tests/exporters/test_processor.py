"""ScoringSpanProcessor with hand-made spans and a scripted judge."""

from __future__ import annotations

import threading

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragas_trace import semconv as sc
from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.evaluation_span import SPAN_NAME
from ragas_trace.scorer.breaker import CircuitBreaker
from ragas_trace.scorer.sampler import Sampler
from ragas_trace.testing.rag_spans import evaluation_status as status_of
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge


def test_scored_root_is_exported_once_with_scores_and_an_evaluation_span(make_rig):
    rig = make_rig()
    root_id = rag_request(rig.tracer)
    assert rig.processor.force_flush(5000)
    roots = rig.named("rag")
    assert len(roots) == 1
    attrs = roots[0].attributes
    assert attrs[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert attrs[sc.RAGAS_FAITHFULNESS] == 0.9
    assert attrs[sc.RAGAS_ANSWER_RELEVANCE] == 0.9
    assert attrs[sc.RAGAS_CONTEXT_RELEVANCE] == 0.9
    assert attrs["ragas.faithfulness.label"] == "pass"
    assert [attrs[f"ragas.{m}.status"] for m in
            ("faithfulness", "answer_relevance", "context_relevance")] == ["scored"] * 3
    assert attrs[sc.RAGAS_EVALUATION_JUDGE] == "scripted"
    assert attrs[sc.RAGAS_JUDGE_PROMPT_TOKENS] == 100
    assert attrs[sc.RAGAS_STATEMENTS_TOTAL] == 2
    assert attrs[sc.RAGAS_STATEMENTS_SUPPORTED] == 1
    assert attrs[sc.INPUT_VALUE] == "What is the capital of France?"
    assert {s.name for s in rig.spans()} == {"rag", "retriever", "llm", SPAN_NAME}
    assert rig.judge.contexts == [["Paris is the capital and largest city of France."]]

    (evaluation,) = rig.named(SPAN_NAME)
    assert evaluation.attributes[sc.SPAN_KIND] == sc.KIND_EVALUATOR
    assert len(evaluation.links) == 1
    assert evaluation.links[0].context.span_id == root_id
    assert evaluation.parent is None
    assert evaluation.context.trace_id != roots[0].context.trace_id
    assert attrs[sc.RAGAS_EVALUATION_TRACE_ID] == f"{evaluation.context.trace_id:032x}"
    names = {evaluation.attributes[f"evaluations.{i}.evaluation.name"] for i in range(3)}
    assert names == {"faithfulness", "answer_relevance", "context_relevance"}
    events = [e for e in evaluation.events if e.name == sc.GEN_AI_EVALUATION_RESULT]
    assert len(events) == 3
    assert all(e.attributes[sc.GEN_AI_EVALUATION_SCORE_VALUE] == 0.9 for e in events)
    assert all(e.attributes[sc.GEN_AI_EVALUATION_SCORE_LABEL] == "pass" for e in events)


def test_labels_follow_thresholds(make_rig):
    rig = make_rig(ScriptedJudge(0.5), thresholds={
        "faithfulness": 0.6, "answer_relevance": 0.5, "context_relevance": 0.2})
    rag_request(rig.tracer)
    assert rig.processor.force_flush(5000)
    attrs = rig.named("rag")[0].attributes
    assert attrs["ragas.faithfulness.label"] == "fail"
    assert attrs["ragas.answer_relevance.label"] == "pass"
    assert attrs["ragas.context_relevance.label"] == "pass"


def test_children_and_non_rag_spans_go_downstream_at_once(make_rig):
    gate = threading.Event()
    rig = make_rig(ScriptedJudge(gate=gate))
    with rig.tracer.start_as_current_span("plain"):
        pass
    rag_request(rig.tracer)
    names = [s.name for s in rig.spans()]
    assert names == ["plain", "retriever", "llm"]  # the root is held while the judge waits
    assert rig.processor.held_count == 1
    gate.set()
    assert rig.processor.force_flush(5000)
    assert rig.processor.held_count == 0
    assert [s.name for s in rig.named("rag")] == ["rag"]


def test_unsampled_root_goes_out_at_once_marked_not_sampled(make_rig):
    rig = make_rig(sampler=Sampler(0.0))
    rag_request(rig.tracer)
    (root,) = rig.named("rag")
    assert status_of(root) == "not_sampled"
    assert root.attributes[sc.RAGAS_EVALUATION_REASON] == "ratio"
    assert rig.judge.calls == 0


def test_always_attribute_overrides_the_ratio(make_rig):
    rig = make_rig(sampler=Sampler(0.0))
    rag_request(rig.tracer, root_attributes={sc.RAGAS_ALWAYS_SCORE: True})
    assert rig.processor.force_flush(5000)
    assert status_of(rig.named("rag")[0]) == "scored"


def test_hold_timeout_exports_unscored_then_the_evaluation_span_still_comes(make_rig):
    gate = threading.Event()
    rig = make_rig(ScriptedJudge(gate=gate), hold_timeout_s=0.2)
    rag_request(rig.tracer)
    assert rig.wait(lambda spans: any(s.name == "rag" for s in spans), timeout=1.2)
    (root,) = rig.named("rag")
    assert status_of(root) == "timeout"
    assert root.attributes[sc.RAGAS_EVALUATION_REASON] == "hold_timeout"
    assert sc.RAGAS_FAITHFULNESS not in root.attributes
    gate.set()
    assert rig.processor.force_flush(5000)
    assert len(rig.named("rag")) == 1
    assert len(rig.named(SPAN_NAME)) == 1


def test_full_hold_buffer_exports_unscored_as_dropped(make_rig):
    gate = threading.Event()
    rig = make_rig(ScriptedJudge(gate=gate), max_held_spans=1)
    for _ in range(3):
        rag_request(rig.tracer)
    statuses = [(status_of(s), s.attributes.get(sc.RAGAS_EVALUATION_REASON))
                for s in rig.named("rag")]
    assert statuses == [("dropped", "hold_full")] * 2
    gate.set()
    assert rig.processor.force_flush(5000)
    assert sorted(status_of(s) for s in rig.named("rag")) == ["dropped", "dropped", "scored"]


def test_full_queue_exports_unscored_as_dropped(make_rig):
    gate = threading.Event()
    rig = make_rig(ScriptedJudge(gate=gate), concurrency=1, queue_size=1)
    rag_request(rig.tracer)
    assert rig.wait(lambda _: rig.judge.calls == 1)  # first one is with the judge
    rag_request(rig.tracer)  # waits in the queue
    rag_request(rig.tracer)  # no room
    assert [(status_of(s), s.attributes[sc.RAGAS_EVALUATION_REASON])
            for s in rig.named("rag")] == [("dropped", "queue_full")]
    gate.set()
    assert rig.processor.force_flush(5000)
    assert sorted(status_of(s) for s in rig.named("rag")) == ["dropped", "scored", "scored"]


def test_judge_failures_are_failed_and_open_the_breaker(make_rig):
    rig = make_rig(ScriptedJudge(mode="fail"), concurrency=1,
                   breaker=CircuitBreaker(failures=2, reset_s=60))
    for _ in range(4):
        rag_request(rig.tracer)
        assert rig.processor.force_flush(5000)
    roots = rig.named("rag")
    assert [status_of(s) for s in roots] == ["failed"] * 4
    assert [s.attributes[sc.RAGAS_EVALUATION_REASON] for s in roots][2:] == ["circuit_open"] * 2
    assert rig.judge.calls == 2
    assert roots[0].attributes["ragas.faithfulness.status"] == "failed"
    assert not rig.named(SPAN_NAME)


def test_shutdown_exports_everything_still_held_and_is_safe_twice(make_rig):
    rig = make_rig(ScriptedJudge(mode="hang"), hold_timeout_s=60)
    for _ in range(3):
        rag_request(rig.tracer)
    assert rig.processor.shutdown(2.0) is False  # the judge never answered
    roots = rig.named("rag")
    assert [(status_of(s), s.attributes[sc.RAGAS_EVALUATION_REASON]) for s in roots] == [
        ("dropped", "shutdown")] * 3
    assert rig.processor.shutdown(1.0) is True
    assert rig.judge.closed == 1


def test_only_the_outermost_chain_is_scored(make_rig):
    rig = make_rig()
    outer = {sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: "outer question?"}
    with rig.tracer.start_as_current_span("outer", attributes=outer) as span:
        rag_request(rig.tracer, question="inner question?", name="inner")
        span.set_attribute(sc.OUTPUT_VALUE, "Paris is the capital of France.")
    assert rig.processor.force_flush(5000)
    assert status_of(rig.named("outer")[0]) == "scored"
    assert status_of(rig.named("inner")[0]) is None
    assert rig.judge.questions == ["outer question?"]
    assert rig.judge.contexts == [["Paris is the capital and largest city of France."]]


def test_content_policy_drop_strips_exports_but_the_judge_sees_everything(make_rig):
    rig = make_rig(content_policy=ContentPolicy("drop"))
    rag_request(rig.tracer)
    assert rig.processor.force_flush(5000)
    for span in rig.spans():
        assert sc.INPUT_VALUE not in span.attributes
        assert sc.OUTPUT_VALUE not in span.attributes
        assert sc.document_key(0, sc.DOCUMENT_CONTENT) not in span.attributes
    retriever = rig.named("retriever")[0]
    assert retriever.attributes[sc.document_key(0, sc.DOCUMENT_ID)] == "d0"
    assert status_of(rig.named("rag")[0]) == "scored"
    assert rig.judge.questions == ["What is the capital of France?"]
    assert rig.judge.contexts == [["Paris is the capital and largest city of France."]]


def test_content_policy_redact_and_truncate(make_rig):
    policy = ContentPolicy("redact", redact=lambda text: text.replace("Paris", "[CITY]"),
                           max_chars=12)
    rig = make_rig(content_policy=policy)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(5000)
    root = rig.named("rag")[0]
    assert root.attributes[sc.OUTPUT_VALUE] == "[CITY] is th"
    assert rig.named("retriever")[0].attributes[sc.document_key(0, sc.DOCUMENT_CONTENT)] == (
        "[CITY] is th")
    assert rig.named("llm")[0].attributes[sc.OUTPUT_VALUE] == "[CITY] is th"


def test_ingested_spans_from_elsewhere_are_scored(make_rig):
    source = InMemorySpanExporter()
    other = TracerProvider()
    other.add_span_processor(SimpleSpanProcessor(source))
    rag_request(other.get_tracer("elsewhere"))
    rig = make_rig()
    rig.processor.ingest(list(reversed(source.get_finished_spans())))
    assert rig.processor.force_flush(5000)
    assert status_of(rig.named("rag")[0]) == "scored"
    assert rig.judge.contexts == [["Paris is the capital and largest city of France."]]


def test_added_attributes_survive_a_full_span(make_rig):
    rig = make_rig()
    many = {f"filler.{i}": i for i in range(120)}  # 128 attributes with the collectors'
    rag_request(rig.tracer, root_attributes=many)
    assert rig.processor.force_flush(5000)
    root = rig.named("rag")[0]
    assert len(root.attributes) == 128
    assert root.attributes[sc.RAGAS_EVALUATION_STATUS] == "scored"
    assert root.attributes[sc.RAGAS_FAITHFULNESS] == 0.9
    assert root.dropped_attributes > 0


def test_a_root_that_learns_its_question_at_the_end_keeps_its_passages(make_rig):
    """LangChain streaming: the question arrives with on_chain_end."""
    rig = make_rig()
    with rig.tracer.start_as_current_span("stream", attributes={
            sc.SPAN_KIND: sc.KIND_CHAIN}) as root:
        rag_request(rig.tracer, question="inner?", name="inner")
        root.set_attribute(sc.INPUT_VALUE, "streamed question?")
        root.set_attribute(sc.OUTPUT_VALUE, "Paris is the capital of France.")
    assert rig.processor.force_flush(5000)
    assert status_of(rig.named("stream")[0]) == "scored"
    assert rig.judge.questions == ["streamed question?"]
    assert rig.judge.contexts == [["Paris is the capital and largest city of France."]]


def test_an_abandoned_stream_is_not_scored(make_rig):
    """A partial answer is what the user read before stopping, not the app's answer."""
    rig = make_rig()
    rag_request(rig.tracer, name="abandoned",
                root_attributes={sc.RAGAS_STREAM_STATUS: sc.STREAM_ABANDONED})
    rag_request(rig.tracer, name="completed",
                root_attributes={sc.RAGAS_STREAM_STATUS: sc.STREAM_COMPLETED})
    assert rig.processor.force_flush(5000)
    abandoned = rig.named("abandoned")[0].attributes
    assert abandoned[sc.RAGAS_EVALUATION_STATUS] == "unscorable"
    assert abandoned[sc.RAGAS_EVALUATION_REASON] == "stream_abandoned"
    assert sc.RAGAS_FAITHFULNESS not in abandoned
    assert status_of(rig.named("completed")[0]) == "scored"
    assert len(rig.judge.questions) == 1


def test_a_top_level_chain_that_never_gets_a_question_is_unscorable(make_rig):
    rig = make_rig()
    with rig.tracer.start_as_current_span("plain-chain", attributes={
            sc.SPAN_KIND: sc.KIND_CHAIN}):
        with rig.tracer.start_as_current_span("llm", attributes={sc.SPAN_KIND: sc.KIND_LLM}):
            pass
    assert len(rig.processor._traces) == 0
    assert [s.name for s in rig.spans()] == ["llm", "plain-chain"]
    root = rig.named("plain-chain")[0].attributes
    assert root[sc.RAGAS_EVALUATION_STATUS] == "unscorable"
    assert root[sc.RAGAS_EVALUATION_REASON] == "no_question"
    assert rig.judge.calls == 0


def test_scoring_restarts_in_a_forked_child(make_rig):
    import os

    rig = make_rig()
    rag_request(rig.tracer)  # the scorer and reaper threads run in the parent
    assert rig.processor.force_flush(5000)
    pid = os.fork()
    if pid == 0:  # child: fresh threads on first use
        code = 1
        try:
            rig.exporter.clear()
            rag_request(rig.tracer)
            ok = rig.processor.force_flush(5000)
            code = 0 if ok and status_of(rig.named("rag")[0]) == "scored" else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_content_policy_cleans_span_events_too(make_rig):
    rig = make_rig(content_policy=ContentPolicy("drop"))
    with rig.tracer.start_as_current_span("llm-call", attributes={
            sc.SPAN_KIND: sc.KIND_LLM}) as span:
        span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": "secret question",
                                                 "other": 1})
    (exported,) = rig.named("llm-call")
    assert [dict(e.attributes) for e in exported.events] == [{"other": 1}]


def test_a_root_whose_trace_was_evicted_is_not_scored_without_its_passages(make_rig):
    rig = make_rig(max_open_traces=1)
    tracer = rig.tracer
    first = tracer.start_span("first", attributes={sc.SPAN_KIND: sc.KIND_CHAIN,
                                                   sc.INPUT_VALUE: "first?"})
    rag_request(tracer)  # opens a second trace: the first one is evicted
    first.set_attribute(sc.OUTPUT_VALUE, "An answer.")
    first.end()
    assert rig.processor.force_flush(5000)
    (evicted,) = rig.named("first")
    assert (status_of(evicted), evicted.attributes[sc.RAGAS_EVALUATION_REASON]) == (
        "dropped", "open_traces_full")
    assert status_of(rig.named("rag")[0]) == "scored"
    assert rig.judge.calls == 1


def _failing_request(rig, question: str) -> None:
    from ragas_trace.collectors import _attributes as at

    attrs = {**dict(at.chain_attributes("rag", "test", "test-app")),
             **dict(at.input_attributes(question))}
    try:
        with rig.tracer.start_as_current_span("rag", attributes=attrs):
            with rig.tracer.start_as_current_span("retriever", attributes=dict(
                    at.retriever_attributes())):
                raise ValueError(f"no passages for {question!r}")
    except ValueError:
        pass


def _wire_text(span) -> str:
    """Everything of a span that leaves the process, as one string."""
    parts = [repr(dict(span.attributes)), repr(span.status.description)]
    parts += [repr(dict(e.attributes or {})) for e in span.events]
    return " ".join(parts)


def test_content_policy_drop_covers_exception_events_and_status(make_rig):
    rig = make_rig(content_policy=ContentPolicy("drop"))
    _failing_request(rig, "my secret question")
    assert rig.processor.force_flush(5000)
    assert {s.name for s in rig.spans()} >= {"rag", "retriever"}
    for span in rig.spans():
        assert "secret" not in _wire_text(span), span.name
    (retriever,) = rig.named("retriever")
    (event,) = retriever.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "ValueError"  # the type is not content
    assert retriever.status.status_code.name == "ERROR"


def test_content_policy_redact_covers_exception_events_and_status(make_rig):
    rig = make_rig(content_policy=ContentPolicy(
        "redact", redact=lambda text: text.replace("secret", "[X]")))
    _failing_request(rig, "my secret question")
    assert rig.processor.force_flush(5000)
    for span in rig.spans():
        assert "secret" not in _wire_text(span), span.name
    (root,) = rig.named("rag")
    assert "[X]" in root.status.description
    assert "[X]" in root.events[0].attributes["exception.message"]


def test_the_judge_gets_the_reranked_passages_and_drop_strips_them(make_rig):
    rig = make_rig(content_policy=ContentPolicy("drop"))
    kept = "Paris is the capital and largest city of France."
    reranker = {sc.SPAN_KIND: sc.KIND_RERANKER,
                sc.document_key(0, sc.DOCUMENT_ID, sc.RERANKER_OUTPUT_DOCUMENTS): "d0",
                sc.document_key(0, sc.DOCUMENT_CONTENT, sc.RERANKER_OUTPUT_DOCUMENTS): kept}
    attrs = {sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: "What is the capital of France?",
             sc.OUTPUT_VALUE: "Paris."}
    with rig.tracer.start_as_current_span("rag", attributes=attrs):
        with rig.tracer.start_as_current_span("retriever", attributes={
                sc.SPAN_KIND: sc.KIND_RETRIEVER,
                sc.document_key(0, sc.DOCUMENT_ID): "d0",
                sc.document_key(0, sc.DOCUMENT_CONTENT): kept,
                sc.document_key(1, sc.DOCUMENT_ID): "d1",
                sc.document_key(1, sc.DOCUMENT_CONTENT): "Lyon is a city in France."}):
            pass
        with rig.tracer.start_as_current_span("cutoff", attributes=reranker):
            pass
    assert rig.processor.force_flush(5000)
    assert rig.judge.contexts == [[kept]]
    exported = rig.named("cutoff")[0].attributes
    assert sc.document_key(0, sc.DOCUMENT_CONTENT, sc.RERANKER_OUTPUT_DOCUMENTS) not in exported
    assert exported[sc.document_key(0, sc.DOCUMENT_ID, sc.RERANKER_OUTPUT_DOCUMENTS)] == "d0"
