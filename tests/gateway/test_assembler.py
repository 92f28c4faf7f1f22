from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.gateway.assembler import Release, TraceAssembler
from ragas_trace.gateway.convert import Limits, convert_request
from ragas_trace.testing import InMemoryTracing


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Sink:
    def __init__(self) -> None:
        self.passed: list[str] = []
        self.completed: list[tuple[list[str], Release]] = []
        self.copies: list[str] = []

    def pass_through(self, span: ReadableSpan) -> None:
        self.passed.append(span.name)

    def duplicate(self, span: ReadableSpan) -> None:
        self.copies.append(span.name)

    def complete(self, spans: list[ReadableSpan], why: Release) -> None:
        self.completed.append((sorted(s.name for s in spans), why))


def _rag_trace(prefix: str = "") -> list[ReadableSpan]:
    """root CHAIN -> nested CHAIN -> retriever, and an LLM span; received form."""
    tracing = InMemoryTracing()
    tracer = tracing.tracer
    with tracer.start_as_current_span(prefix + "root", attributes={
            sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: "q?", sc.OUTPUT_VALUE: "a."}):
        with tracer.start_as_current_span(prefix + "inner", attributes={
                sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: "q?"}):
            with tracer.start_as_current_span(prefix + "retriever", attributes={
                    sc.SPAN_KIND: sc.KIND_RETRIEVER,
                    sc.document_key(0, sc.DOCUMENT_CONTENT): "ctx"}):
                pass
        with tracer.start_as_current_span(prefix + "llm", attributes={sc.SPAN_KIND: sc.KIND_LLM}):
            pass
    tracing.shutdown()
    return convert_request(encode_spans(tracing.spans()), Limits()).spans


def _by_name(spans: list[ReadableSpan]) -> dict[str, ReadableSpan]:
    return {s.name: s for s in spans}


ALL = ["inner", "llm", "retriever", "root"]


def test_root_first_then_children_in_other_batches():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, clock=clock)
    spans = _by_name(_rag_trace())
    assembler.add([spans["root"]])
    clock.now = 5.0
    assembler.tick()
    assert sink.completed == []  # no retrieval yet: keeps waiting
    assembler.add([spans["llm"], spans["retriever"]])
    assembler.tick()
    assert sink.completed == []  # not quiet yet
    assembler.add([spans["inner"]])
    clock.now = 6.5
    assembler.tick()
    assert sink.completed == [(ALL, "ready")]
    assert sink.passed == []
    assert assembler.held_traces() == 0
    assert assembler.held_spans() == 0


def test_children_first_root_last():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, clock=clock)
    spans = _by_name(_rag_trace())
    assembler.add([spans["retriever"]])
    assembler.add([spans["llm"], spans["inner"]])
    clock.now = 3.0
    assembler.tick()
    assert sink.completed == []  # a retrieval but no root yet
    assembler.add([spans["root"]])
    clock.now = 4.0
    assembler.tick()
    assert sink.completed == [(ALL, "ready")]


def test_root_without_retrieval_waits_at_most_max_wait():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, clock=clock)
    assembler.add([_by_name(_rag_trace())["root"]])
    clock.now = 9.9
    assembler.tick()
    assert sink.completed == []
    clock.now = 10.0
    assembler.tick()
    assert sink.completed == [(["root"], "max_wait")]


def test_retrievals_whose_root_never_comes_are_forwarded_after_max_wait():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, clock=clock)
    spans = _by_name(_rag_trace())
    assembler.add([spans["retriever"], spans["llm"]])
    clock.now = 10.0
    assembler.tick()
    assert sink.completed == []
    assert sink.passed == ["retriever", "llm"]


def test_non_rag_spans_pass_at_once_and_are_not_kept():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, clock=clock)
    tracing = InMemoryTracing()
    with tracing.tracer.start_as_current_span("http GET"):
        with tracing.tracer.start_as_current_span("db"):
            pass
    spans = convert_request(encode_spans(tracing.spans()), Limits()).spans
    assembler.add(spans)
    assert sink.passed == ["db", "http GET"]
    assert assembler.held_spans() == 0


def test_memory_bound_releases_the_oldest_trace_early():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, max_spans=6, clock=clock)
    assembler.add(_rag_trace("a-"))
    assembler.add(_rag_trace("b-"))
    assert sink.completed == [(["a-" + n for n in ALL], "evicted")]
    assert assembler.held_spans() == 4


def test_byte_bound_releases_the_oldest_trace_early():
    """Few spans, but big ones: the byte bound releases what the span count would keep."""
    from ragas_trace.gateway.sizes import span_bytes

    clock, sink = Clock(), Sink()
    first, second = _rag_trace("a-"), _rag_trace("b-")
    one_trace = sum(span_bytes(s) for s in first)
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, max_spans=1000,
                               max_bytes=one_trace + one_trace // 2, clock=clock)
    assembler.add(first)
    assert sink.completed == []
    assembler.add(second)
    assert sink.completed == [(["a-" + n for n in ALL], "evicted")]
    assert assembler.held_spans() == 4


def test_close_releases_everything_held():
    sink = Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0)
    assembler.add(_rag_trace())
    assembler.close()
    assert sink.completed == [(ALL, "shutdown")]


def test_copies_of_a_root_are_not_held_again_while_held_or_after_release():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, clock=clock)
    spans = _by_name(_rag_trace())
    assembler.add([spans["root"], spans["root"], spans["retriever"], spans["inner"],
                   spans["llm"], spans["root"]])
    assert sink.copies == ["root", "root"]  # forwarded at once
    clock.now = 2.0
    assembler.tick()
    assert sink.completed == [(ALL, "ready")]
    assembler.add([spans["root"], spans["inner"]])  # replayed after scoring
    assert sink.copies == ["root", "root", "root", "inner"]
    assert assembler.held_traces() == 0


def test_released_roots_are_remembered_for_a_bounded_time_and_number():
    clock, sink = Clock(), Sink()
    assembler = TraceAssembler(sink, quiet_s=1.0, max_wait_s=10.0, recent_roots=2,
                               recent_ttl_s=60.0, clock=clock)
    traces = [_by_name(_rag_trace(f"t{i}-")) for i in range(3)]
    for trace in traces:
        assembler.add(list(trace.values()))
    clock.now = 2.0
    assembler.tick()
    assert len(sink.completed) == 3
    # Only the last 2 released traces' roots are remembered (2 candidates each, so
    # the newest trace alone fills the bound).
    assembler.add([traces[2]["t2-root"], traces[0]["t0-root"]])
    assert sink.copies == ["t2-root"]
    assert assembler.held_traces() == 1  # t0's root is held again
    clock.now = 70.0
    assembler.tick()  # past the TTL: forgotten
    assembler.add([traces[2]["t2-root"]])
    assert sink.copies == ["t2-root"]
