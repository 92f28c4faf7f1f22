"""Service mode on 127.0.0.1: ``ragas-trace serve`` in a process of its own scores
what an app exports to it over OTLP. The gateway scores the RAG traces and forwards
every span to the next hop, here a small OTLP receiver that prints the scores it
gets. Offline: the app is the demo's LangChain chain, the judge the local
one. The ``demo`` extra is ``langchain``, ``local`` and ``otlp``.

    pip install -e '.[demo]'   # in a clone of this repository
    python examples/service_mode.py

Expected output: scored
"""

import json
import os
import signal
import subprocess
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from ragas_trace.collectors.langchain import RagasCallbackHandler
from ragas_trace.demo.app import build_chain
from ragas_trace.demo.corpus import QUESTIONS as DEMO_QUESTIONS
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver

QUESTIONS = [q.text for q in DEMO_QUESTIONS[:2]]


def start_gateway(next_hop: str) -> tuple[subprocess.Popen[str], str]:
    """``ragas-trace serve`` on a free port; returns it and its OTLP/HTTP endpoint."""
    gateway = subprocess.Popen(
        [sys.executable, "-m", "ragas_trace.cli.main", "serve",
         "--otlp-http", "127.0.0.1:0", "--otlp-grpc", "off",
         "--forward-endpoint", next_hop, "--forward-protocol", "http",
         "--judge", "local", "--quiet-s", "0.5", "--log-level", "warning"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert gateway.stdout is not None
    ready = json.loads(gateway.stdout.readline())  # one JSON line once it listens
    return gateway, ready["otlp_http"]


def main() -> int:
    with OtlpHttpReceiver() as next_hop:
        gateway, endpoint = start_gateway(next_hop.endpoint)
        try:
            # The app: an ordinary OpenTelemetry set-up exporting over OTLP; no scorer in it.
            provider = TracerProvider(resource=Resource.create({"service.name": "faq-app"}))
            provider.add_span_processor(
                BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))
            handler = RagasCallbackHandler(tracer_provider=provider)
            chain = build_chain()
            for question in QUESTIONS:
                answer = chain.invoke(question, config={"callbacks": [handler]})
                print(f"app: {question} -> {answer}")
            provider.shutdown()

            def all_scored(spans: list) -> bool:
                return sum("ragas.evaluation.status" in s.attributes
                           and s.attributes.get("openinference.span.kind") != "EVALUATOR"
                           for s in spans) == len(QUESTIONS)

            if not next_hop.wait_for(all_scored, timeout=60):
                print("the next hop did not receive every scored trace in time", file=sys.stderr)
                return 1
        finally:
            gateway.send_signal(signal.SIGTERM)  # flushes what it holds, then exits
            gateway.wait(timeout=30)
        for span in next_hop.spans():
            a = span.attributes
            if "ragas.evaluation.status" in a and a.get("openinference.span.kind") == "CHAIN":
                scores = ", ".join(f"{m.replace('_', ' ')} {a[f'ragas.{m}']:.2f}"
                                   for m in ("faithfulness", "answer_relevance")
                                   if f"ragas.{m}" in a)
                print(f"next hop: {a['input.value']!r} {a['ragas.evaluation.status']}: {scores}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
