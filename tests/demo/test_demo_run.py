"""The demo end to end in-process: real chain, real callback, the local judge, D's
exporters. Spans are read back from ``spans.jsonl`` as OTLP JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ragas_trace import semconv as sc
from ragas_trace.cli.main import main
from ragas_trace.demo.answers import _EVASIONS
from ragas_trace.demo.corpus import PASSAGES
from ragas_trace.demo.report import summary
from ragas_trace.demo.runner import DemoOptions, run_demo
from ragas_trace.judges.local.judge import LocalJudge
from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.results import Metric
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver, WireSpan


def _read_spans(path: Path) -> list[WireSpan]:
    spans = []
    for line in path.read_text(encoding="utf-8").splitlines():
        request = json_format.Parse(line, ExportTraceServiceRequest())
        for resource_spans in request.resource_spans:
            resource = {kv.key: kv.value.string_value
                        for kv in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                spans.extend(WireSpan.from_pb(s, resource) for s in scope_spans.spans)
    return spans


def _rag_roots(spans: list[WireSpan]) -> list[WireSpan]:
    return [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN
            and sc.RAGAS_EVALUATION_STATUS in s.attributes]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[WireSpan]]:
    out = tmp_path_factory.mktemp("demo")
    result = run_demo(DemoOptions(requests=16, out_dir=out, seed=3, hallucination_rate=0.4,
                                  evasion_rate=0.1, service_name="demo-test"))
    assert result.spans_file == out / "spans.jsonl"
    return result, _read_spans(result.spans_file)


def test_every_line_is_an_otlp_json_export_request(demo_run: tuple[Any, list[WireSpan]]) -> None:
    result, spans = demo_run
    lines = result.spans_file.read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        assert "resourceSpans" in json.loads(line)
    assert {s.resource.get("service.name") for s in spans} == {"demo-test"}


def test_rag_spans_carry_the_three_scores_and_labels(
        demo_run: tuple[Any, list[WireSpan]]) -> None:
    result, spans = demo_run
    roots = _rag_roots(spans)
    assert len(roots) == 16
    assert result.scoring_finished
    for root in roots:
        attrs = root.attributes
        assert attrs[sc.RAGAS_EVALUATION_STATUS] == "scored"
        assert attrs[sc.INPUT_VALUE] and attrs[sc.OUTPUT_VALUE]
        assert attrs[sc.RAGAS_APP_NAME] == "marrowick-guide"
        for metric in Metric:
            assert 0.0 <= attrs[sc.metric_attribute(metric)] <= 1.0
            assert attrs[sc.metric_label_attribute(metric)] in {"pass", "fail"}
    retrievers = [s for s in spans if s.attributes.get(sc.SPAN_KIND) == sc.KIND_RETRIEVER]
    assert len(retrievers) == 16
    assert all(s.attributes[sc.document_key(0, sc.DOCUMENT_CONTENT)] for s in retrievers)


def test_hallucinated_answers_score_low_and_show_unsupported_statements(
        demo_run: tuple[Any, list[WireSpan]]) -> None:
    result, _ = demo_run
    faithful = [r for r in result.rows if r.labels[Metric.FAITHFULNESS] == "pass"]
    unfaithful = [r for r in result.rows if r.labels[Metric.FAITHFULNESS] == "fail"]
    assert faithful and unfaithful
    assert any(r.unsupported for r in unfaithful)
    assert min(r.scores[Metric.FAITHFULNESS] for r in faithful) > max(
        r.scores[Metric.FAITHFULNESS] for r in unfaithful)


def test_the_same_seed_gives_the_same_answers(demo_run: tuple[Any, list[WireSpan]],
                                              tmp_path: Path) -> None:
    result, _ = demo_run
    again = run_demo(DemoOptions(requests=16, out_dir=tmp_path, seed=3, hallucination_rate=0.4,
                                 evasion_rate=0.1, service_name="demo-test"))
    assert [r.answer for r in again.rows] == [r.answer for r in result.rows]
    assert [r.scores for r in again.rows] == [r.scores for r in result.rows]


def test_otlp_endpoint_receives_traces_and_metrics_instead_of_the_file(tmp_path: Path) -> None:
    with OtlpHttpReceiver() as receiver:
        result = run_demo(DemoOptions(requests=4, out_dir=tmp_path, otlp_endpoint=receiver.endpoint,
                                      service_name="demo-otlp"))
        assert result.spans_file is None
        assert not (tmp_path / "spans.jsonl").exists()
        roots = _rag_roots(receiver.spans())
        assert len(roots) == 4
        assert all(sc.RAGAS_FAITHFULNESS in r.attributes for r in roots)
        assert {"ragas.faithfulness", "ragas.evaluations"} <= receiver.metric_names()


def test_cli_prints_the_table_and_writes_the_file(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--requests", "3", "--out", str(tmp_path), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    for column in ("question", "faith", "ans-rel", "ctx-rel", "answer", "why"):
        assert column in header
    assert "3 requests, 3 scored" in out
    assert len(_rag_roots(_read_spans(tmp_path / "spans.jsonl"))) == 3


@pytest.mark.parametrize("args", [["--requests", "0"], ["--metrics-port", "70000"],
                                  ["--hallucination-rate", "1.5"], ["--judge", "gpt"]])
def test_cli_rejects_bad_flags(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", *args])
    assert exc.value.code == 2
    assert "demo" in capsys.readouterr().err


def test_openai_judge_scores_through_an_openai_compatible_endpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragas_trace.testing.openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        result = run_demo(DemoOptions(requests=3, out_dir=tmp_path, judge="openai",
                                      service_name="demo-openai"))
        assert server.stats().chat_requests > 0
    roots = _rag_roots(_read_spans(tmp_path / "spans.jsonl"))
    assert [r.attributes[sc.RAGAS_EVALUATION_STATUS] for r in roots] == ["scored"] * 3
    assert all(str(r.attributes[sc.RAGAS_EVALUATION_JUDGE]).startswith("openai:") for r in roots)
    assert all(r.scores[Metric.FAITHFULNESS] is not None for r in result.rows)


def test_cli_explains_a_missing_api_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["demo", "--requests", "1", "--out", str(tmp_path), "--judge", "openai"]) == 2
    assert "API key" in capsys.readouterr().err


def test_make_demo_labels_copied_answers_pass_and_invented_ones_fail(tmp_path: Path) -> None:
    """The run ``make demo`` makes (40 requests, seed 0), labelled with the local
    judge's own thresholds: every answer copied word for word from the passages passes
    faithfulness, every invented one fails it and says why, evasive ones make no
    statement; the summary counts only the invented ones as unfaithful."""
    result = run_demo(DemoOptions(out_dir=tmp_path))
    thresholds = LocalJudge().thresholds
    assert result.thresholds == thresholds
    corpus = " ".join(p.text for p in PASSAGES)
    copied = [r for r in result.rows
              if all(s in corpus for s in split_sentences(r.answer))]
    evasive = [r for r in result.rows if r.answer in _EVASIONS]
    invented = [r for r in result.rows if r not in copied and r not in evasive]
    assert len(copied) + len(evasive) + len(invented) == len(result.rows) == 40
    assert copied and invented
    for row in result.rows:  # every label is the judge's threshold applied to the score
        for metric in Metric:
            value = row.scores[metric]
            assert (row.labels[metric] is None) == (value is None)
            if value is not None:
                expected = "pass" if value >= thresholds[metric] else "fail"
                assert row.labels[metric] == expected, (row.answer, metric)
    assert [r.answer for r in copied if r.labels[Metric.FAITHFULNESS] != "pass"] == []
    assert [r.answer for r in invented if r.labels[Metric.FAITHFULNESS] != "fail"] == []
    assert all(r.labels[Metric.FAITHFULNESS] is None for r in evasive)
    for row in result.rows:
        assert (row.why != "") == (row.passed is False or bool(row.unsupported)), row
        if row.labels[Metric.FAITHFULNESS] == "fail":
            # Shown cut to two decimals, never rounded up to its threshold.
            value = row.scores[Metric.FAITHFULNESS]
            shown = re.search(r"faith (\d\.\d\d) < ", row.why)
            assert shown is not None and value is not None, row.why
            assert value - 0.01 < float(shown.group(1)) <= value + 1e-9, (value, row.why)
    scored = len(copied) + len(invented)
    assert (f"faithfulness (pass at >= {thresholds['faithfulness']:g}): "
            f"mean") in summary(result.rows, result.thresholds)
    assert f"{len(copied)}/{scored} pass" in summary(result.rows, result.thresholds)
