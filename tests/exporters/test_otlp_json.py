from __future__ import annotations

import json

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragas_trace import semconv as sc
from ragas_trace.exporters.otlp_json import OtlpJsonFileExporter
from ragas_trace.testing.rag_spans import rag_request


def test_one_otlp_json_request_per_line(tmp_path):
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    rag_request(provider.get_tracer("t"))
    spans = memory.get_finished_spans()
    path = tmp_path / "spans.jsonl"
    exporter = OtlpJsonFileExporter(path)
    exporter.export(spans[:1])
    exporter.export(spans[1:])
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert span["traceId"] == f"{spans[0].context.trace_id:032x}"  # hex, not base64
    assert span["spanId"] == f"{spans[0].context.span_id:016x}"
    assert span["parentSpanId"] == f"{spans[0].parent.span_id:016x}"
    resource = {a["key"]: a["value"] for a in first["resourceSpans"][0]["resource"]["attributes"]}
    assert resource["service.name"] == {"stringValue": "svc"}
    names = {s["name"] for line in lines for rs in json.loads(line)["resourceSpans"]
             for ss in rs["scopeSpans"] for s in ss["spans"]}
    assert names == {"retriever", "llm", "rag"}
    keys = {a["key"] for line in lines for rs in json.loads(line)["resourceSpans"]
            for ss in rs["scopeSpans"] for s in ss["spans"] for a in s["attributes"]}
    assert sc.INPUT_VALUE in keys


def test_export_after_shutdown_fails(tmp_path):
    exporter = OtlpJsonFileExporter(tmp_path / "x.jsonl")
    exporter.shutdown()
    assert exporter.export([]).name == "FAILURE"
