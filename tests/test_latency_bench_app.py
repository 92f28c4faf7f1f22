"""bench/app_latency.py's ``lower-bound`` arm is a lower bound only if its handler makes
the spans ragas-trace's handler makes for the same request: same names, same parents,
same attributes."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = """
import asyncio, json
import latency_app as la
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

memory = InMemorySpanExporter()
la.rt.tracer_provider.add_span_processor(SimpleSpanProcessor(memory))

def spans(handler):
    memory.clear()
    asyncio.run(la.chain.ainvoke("When was it built? #7", config={"callbacks": [handler]}))
    found = memory.get_finished_spans()
    names = {s.context.span_id: s.name for s in found}
    return sorted([s.name, names.get(s.parent.span_id) if s.parent else None,
                   dict(s.attributes)] for s in found)

print(json.dumps({"lower_bound": spans(la.callbacks[0]),
                  "ours": spans(la.rt.langchain_handler(app_name="latency-bench"))}))
"""


def test_the_lower_bound_arm_makes_the_spans_ragas_trace_makes() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "RAGAS_TRACE_"))}
    # Spans are read in memory; the arm's own OTLP export goes to a closed port.
    env.update(LATENCY_ARM="lower-bound", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "bench")]))
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    made = json.loads(done.stdout.splitlines()[-1])
    assert [name for name, _, _ in made["ours"]] == ["FakeChat", "Passages",
                                                    "RunnableSequence"]
    assert made["lower_bound"] == made["ours"]
