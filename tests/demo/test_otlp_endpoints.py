"""OTLP endpoints as the exporter specification says (issue 17, row 6): the demo,
``setup()``'s exporter and the gateway's next hop, against real OTLP receivers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragas_trace import providers
from ragas_trace import semconv as sc
from ragas_trace.cli.main import main
from ragas_trace.testing import InMemoryTracing
from ragas_trace.testing.otlp_receiver import OtlpGrpcReceiver, OtlpHttpReceiver, WireSpan

_OTEL_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
              "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
              "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _OTEL_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def phoenix() -> Iterator[OtlpHttpReceiver]:
    """A traces-only backend: /v1/metrics is 404, as on Phoenix or Jaeger."""
    with OtlpHttpReceiver(signals=("traces",)) as receiver:
        yield receiver


def _roots(spans: list[WireSpan]) -> list[WireSpan]:
    return [s for s in spans if sc.RAGAS_EVALUATION_STATUS in s.attributes
            and s.attributes.get(sc.SPAN_KIND) == sc.KIND_CHAIN]


def _demo(tmp_path: Path, *extra: str) -> int:
    return main(["demo", "--requests", "3", "--out", str(tmp_path / "out"), *extra])


def test_the_traces_url_a_backend_prints_gets_the_spans_and_metrics_failures_are_told(
        phoenix: OtlpHttpReceiver, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = f"{phoenix.endpoint}/v1/traces"
    assert _demo(tmp_path, "--otlp-endpoint", url) == 0
    assert len(_roots(phoenix.spans())) == 3
    out, err = capsys.readouterr()
    assert f"spans: {len(phoenix.spans())} spans sent to {url}, all delivered" in out
    [metrics_line] = [line for line in out.splitlines() if line.startswith("metrics:")]
    assert f"sent to {phoenix.endpoint}/v1/metrics" in metrics_line
    assert metrics_line.endswith("FAILED")
    assert "metrics export(s) failed" in err
    assert "sent to the OTLP endpoint" not in out


def test_the_traces_endpoint_variable_alone_makes_the_demo_export(
        phoenix: OtlpHttpReceiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{phoenix.endpoint}/v1/traces")
    assert _demo(tmp_path) == 0
    assert len(_roots(phoenix.spans())) == 3
    assert not (tmp_path / "out" / "spans.jsonl").exists()
    assert "metrics: not exported over OTLP" in capsys.readouterr().out


def test_spans_the_backend_refuses_make_the_demo_fail_with_exit_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OtlpHttpReceiver(signals=()) as nothing:  # 404 for every signal
        assert _demo(tmp_path, "--otlp-endpoint", nothing.endpoint) == 3
    out, err = capsys.readouterr()
    assert "spans: 0 spans sent" in out
    assert "3 requests, 3 scored" in out
    assert re.search(rf"^error: \d+ span\(s\) could not be exported to {nothing.endpoint}"
                     r"/v1/traces \(it accepts connections but not the spans\)", err, re.M)
    assert "not scored" not in err and "not every request" not in err


def test_a_base_endpoint_gets_both_signals_over_grpc(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with OtlpGrpcReceiver() as collector:
        assert _demo(tmp_path, "--otlp-endpoint", collector.endpoint) == 0
        assert len(_roots(collector.spans())) == 3
        assert any(name.startswith("ragas") for name in collector.metric_names())
    assert "all delivered" in capsys.readouterr().out


@pytest.mark.parametrize(("env", "flag", "traces", "metrics"), [
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, None,
     "http://c:4318/v1/traces", "http://c:4318/v1/metrics"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, None,
     "http://c:4318/v1/traces", "http://c:4318/v1/metrics"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://p:6006/v1/traces"}, None,
     "http://p:6006/v1/traces", "http://p:6006/v1/metrics"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"}, None,
     "http://t:1/custom", None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:9/ingest"}, None,
     "http://c:4318/v1/traces", "http://m:9/ingest"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/v1/traces"}, "http://f:2",
     "http://f:2/v1/traces", "http://f:2/v1/metrics"),
    ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "http://g:4317",
     "http://g:4317", "http://g:4317"),
])
def test_endpoint_resolution(env: dict[str, str], flag: str | None, traces: str,
                             metrics: str | None) -> None:
    assert providers.otlp_endpoint("traces", flag, env) == traces
    assert providers.otlp_endpoint("metrics", flag, env) == metrics


def test_setups_exporter_takes_a_traces_url_as_the_base_variable(
        phoenix: OtlpHttpReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{phoenix.endpoint}/v1/traces")
    exporter = providers.span_exporter("otlp")
    assert exporter is not None
    tracing = InMemoryTracing()
    with tracing.tracer.start_as_current_span("one"):
        pass
    try:
        from opentelemetry.sdk.trace.export import SpanExportResult
        assert exporter.export(tracing.spans()) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert [s.name for s in phoenix.spans()] == ["one"]


def test_the_gateway_next_hop_takes_a_base_or_a_traces_url(phoenix: OtlpHttpReceiver) -> None:
    from ragas_trace.gateway.downstream import make_exporter

    tracing = InMemoryTracing()
    with tracing.tracer.start_as_current_span("hop"):
        pass
    for endpoint in (phoenix.endpoint, f"{phoenix.endpoint}/v1/traces"):
        exporter = make_exporter("http", endpoint)
        try:
            exporter.export(tracing.spans())
        finally:
            exporter.shutdown()
    assert [s.name for s in phoenix.spans()] == ["hop", "hop"]
