from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragas_trace import semconv as sc
from ragas_trace.demo.exporting import FanOutExporter
from ragas_trace.demo.report import RequestRow, render_table, rows_from_spans, summary
from ragas_trace.results import Metric, MetricResult, Scores, StatementVerdict


def _span(name: str, start: int, attrs: dict[str, object]) -> ReadableSpan:
    return ReadableSpan(name=name, attributes=attrs, start_time=start, end_time=start + 1)  # type: ignore[arg-type]


def _root(question: str, answer: str, faith: float | None, label: str | None,
          start: int, status: str = "scored") -> ReadableSpan:
    attrs: dict[str, object] = {sc.SPAN_KIND: sc.KIND_CHAIN, sc.INPUT_VALUE: question,
                                sc.OUTPUT_VALUE: answer, sc.RAGAS_EVALUATION_STATUS: status}
    if faith is not None:
        for metric in Metric:
            attrs[sc.metric_attribute(metric)] = faith
            attrs[sc.metric_label_attribute(metric)] = label
    return _span("chain", start, attrs)


def test_rows_come_from_rag_roots_in_start_order_with_unsupported_statements() -> None:
    evidence = Scores(judge="j", results={Metric.FAITHFULNESS: MetricResult.scored(0.5)},
                      statements=(StatementVerdict("true one", True),
                                  StatementVerdict("made up", False)))
    spans = [
        _root("q2", "a2", 0.5, "fail", start=20),
        _span("retriever", 5, {sc.SPAN_KIND: sc.KIND_RETRIEVER}),
        _root("q1", "a1", 0.9, "pass", start=10),
        _root("q3", "a3", None, None, start=30, status="timeout"),
    ]
    rows = rows_from_spans(spans, lambda q, a: evidence if q == "q2" else None)
    assert [r.question for r in rows] == ["q1", "q2", "q3"]
    assert rows[1].unsupported == ("made up",)
    assert [r.passed for r in rows] == [True, False, None]
    assert rows[2].scores[Metric.FAITHFULNESS] is None


def test_an_answer_failing_one_label_fails_even_without_the_other() -> None:
    """The demo's evasive answer: no statements (no faithfulness label), answer
    relevance 0 and failed; its verdict is FAIL, not its status "scored"."""
    evasive = RequestRow("How long is the River Lisk?",
                         "I would rather not guess; it depends on many factors.", "scored",
                         {Metric.FAITHFULNESS: None, Metric.ANSWER_RELEVANCE: 0.0,
                          Metric.CONTEXT_RELEVANCE: 1.0},
                         {Metric.FAITHFULNESS: None, Metric.ANSWER_RELEVANCE: "fail",
                          Metric.CONTEXT_RELEVANCE: "pass"}, ())
    unlabelled = RequestRow("Why?", "Because.", "scored", dict.fromkeys(Metric),
                            dict.fromkeys(Metric), ())
    assert evasive.passed is False
    assert unlabelled.passed is None
    rows = render_table([evasive, unlabelled]).splitlines()[2:]
    assert rows[0].split()[-3:] == ["FAIL", "ans-rel", "fails"]
    assert "scored" not in rows[0] and "scored" not in rows[1]
    assert rows[1].split()[-1] == "-"


def test_table_and_summary_show_scores_marks_and_verdicts() -> None:
    row = RequestRow("How tall is it?", "38 m", "scored",
                     {Metric.FAITHFULNESS: 0.25, Metric.ANSWER_RELEVANCE: 0.8,
                      Metric.CONTEXT_RELEVANCE: 0.1},
                     {Metric.FAITHFULNESS: "fail", Metric.ANSWER_RELEVANCE: "pass",
                      Metric.CONTEXT_RELEVANCE: "fail"}, ("It is 90 metres tall.",))
    unscored = RequestRow("Why?", "", "failed", dict.fromkeys(Metric),
                          dict.fromkeys(Metric), ())
    table = render_table([row, unscored]).splitlines()
    assert "0.25 ✗" in table[2] and "0.80 ✓" in table[2] and "FAIL" in table[2]
    assert "It is 90 metres tall." in table[2]
    assert "failed" in table[3]
    text = summary([row, unscored])
    assert text.startswith("2 requests, 1 scored")
    assert "faithfulness: mean 0.25, 0/1 pass" in text
    marked = summary([row], {"faithfulness": 0.3, "answer_relevance": 0.5})
    assert "faithfulness (pass at >= 0.3): mean 0.25, 0/1 pass" in marked
    assert "answer_relevance (pass at >= 0.5): mean 0.80, 1/1 pass" in marked


def _row(faith: float, faith_label: str, unsupported: tuple[str, ...] = (),
         relevance: float = 0.9, relevance_label: str = "pass") -> RequestRow:
    return RequestRow("q", "a", "scored",
                      {Metric.FAITHFULNESS: faith, Metric.ANSWER_RELEVANCE: relevance,
                       Metric.CONTEXT_RELEVANCE: 0.1},
                      {Metric.FAITHFULNESS: faith_label,
                       Metric.ANSWER_RELEVANCE: relevance_label,
                       Metric.CONTEXT_RELEVANCE: "fail"}, unsupported,
                      {"faithfulness": 0.4, "answer_relevance": 0.5, "context_relevance": 0.2})


def test_why_says_what_fails_even_when_every_statement_is_supported() -> None:
    """A failing single-statement answer whose statement the judge supports still
    says why it fails: the score beside the threshold it fell under."""
    assert _row(0.35, "fail").why == "faith 0.35 < 0.4"
    assert _row(0.1, "fail", ("made up",), 0.3, "fail").why == \
        '"made up"; faith 0.10 < 0.4; ans-rel 0.30 < 0.5'
    assert _row(0.9, "pass", ("made up",)).why == '"made up"'  # passes, one doubt shown
    assert _row(0.9, "pass").why == ""  # context relevance rates retrieval, not the answer
    table = render_table([_row(0.35, "fail")]).splitlines()
    assert table[2].endswith("FAIL   faith 0.35 < 0.4")


def test_a_failing_score_never_reads_as_its_threshold() -> None:
    """0.497 against 0.5 rounds to 0.50: a failing score is cut instead."""
    row = _row(0.9, "pass", (), 0.497, "fail")
    assert row.why == "ans-rel 0.49 < 0.5"
    assert "0.49 ✗" in render_table([row]) and "0.50" not in render_table([row])
    assert _row(0.29, "fail").why == "faith 0.29 < 0.4"
    assert "0.90 ✓" in render_table([_row(0.899, "pass")])


class _Broken(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        raise RuntimeError("down")


def test_fan_out_reaches_every_exporter_when_one_fails(caplog: pytest.LogCaptureFixture) -> None:
    first, last = InMemorySpanExporter(), InMemorySpanExporter()
    fan = FanOutExporter([first, _Broken(), last])
    span = _span("s", 1, {})
    assert fan.export([span]) is SpanExportResult.FAILURE
    assert first.get_finished_spans() == (span,) and last.get_finished_spans() == (span,)
    assert "_Broken" in caplog.text
    assert FanOutExporter([first, last]).force_flush()


def test_table_rows_are_capped_and_only_roots_are_kept() -> None:
    from ragas_trace.demo.exporting import ScoredRootsExporter

    keep = ScoredRootsExporter(capacity=2)
    roots = [_root(f"q{i}", "a", 1.0, "pass", start=i) for i in range(3)]
    keep.export([*roots, _span("retriever", 0, {sc.SPAN_KIND: sc.KIND_RETRIEVER})])
    assert keep.spans() == roots[1:]
    rows = rows_from_spans(roots, lambda q, a: None)
    table = render_table(rows, max_rows=2).splitlines()
    assert len(table) == 2 + 2 + 1 and table[-1].startswith("... and 1 more")
