"""How long the exit paths take, and whether flush/shutdown keep their deadline with
the OTLP backend down.

1. Exit and SIGTERM flush times. A child process calls ``setup()`` (OTLP/HTTP to a
   loopback receiver, the OpenAI judge at the loopback fake server, 10 ms a
   call), makes N RAG requests whose roots are held for scoring, then either
   falls off the end of the script or gets SIGTERM. Measured: from the child's
   "ready" to its end, with N roots and, as the baseline in the same run, with
   none (the interpreter's own exit). Also: every root scored? And the same with
   a judge that never answers: the time against the bound asked for
   (``exit_grace_s``, the one deadline for the judge and the export together, plus
   the same exit with nothing held and 0.5 s for the process to end).
2. Backend down. In-process, OTLP traces and metrics to a closed port (the
   exporters' default 10 s timeout and retries): ``force_flush(1.0)`` and
   ``shutdown(1.0)`` after about 3,200 spans, and ``shutdown(0.5)`` after an
   overload (200 roots held by a gated judge); each duration against the deadline
   asked for.

    python bench/shutdown_deadlines.py [--roots 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ragas_trace import semconv as sc
from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver
from results_file import write_results

HERE = Path(__file__).resolve()
# exit_grace_s holds the judge and the export together; beyond it only the process's
# own ending (threads joined, interpreter torn down), measured with nothing held, and:
SLACK_S = 0.5


def child(mode: str, count: int) -> None:
    import ragas_trace
    from ragas_trace.testing.rag_spans import rag_request

    rt = ragas_trace.setup(service_name="bench-exit", judge="openai", exporter="otlp")
    tracer = rt.tracer_provider.get_tracer("bench-exit")
    for _ in range(count):
        rag_request(tracer)
    print("ready", flush=True)
    if mode == "sigterm":
        time.sleep(120)


def run_child(mode: str, count: int, receiver: OtlpHttpReceiver, judge: FakeOpenAIServer,
              grace_s: float) -> tuple[float, int, int]:
    """(seconds from ready to exit, roots received, roots scored)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "RAGAS_TRACE_", "OPENAI_"))}
    env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                "OPENAI_BASE_URL": judge.base_url, "OPENAI_API_KEY": "bench",
                "RAGAS_TRACE_EXIT_GRACE_S": str(grace_s)})
    before = {s.span_id for s in receiver.spans()}
    proc = subprocess.Popen([sys.executable, str(HERE), "--child", mode, str(count)],
                            env=env, text=True, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError("the child did not start")
    start = time.perf_counter()
    if mode == "sigterm":
        proc.send_signal(signal.SIGTERM)
    proc.wait(120)
    elapsed = time.perf_counter() - start
    roots = [s for s in receiver.spans() if s.name == "rag" and s.span_id not in before]
    scored = sum(1 for s in roots if s.attributes.get(sc.RAGAS_EVALUATION_STATUS) == "scored")
    return elapsed, len(roots), scored


def exit_figures(roots: int, repeats: int) -> dict[str, dict[str, Any]]:
    figures: dict[str, dict[str, Any]] = {}
    baselines: dict[str, float] = {}
    with OtlpHttpReceiver() as receiver, FakeOpenAIServer(latency_s=0.01) as judge:
        for mode in ("exit", "sigterm"):
            held = [run_child(mode, roots, receiver, judge, 20.0) for _ in range(repeats)]
            empty = [run_child(mode, 0, receiver, judge, 20.0) for _ in range(repeats)]
            with_roots = statistics.median(r[0] for r in held)
            baseline = statistics.median(r[0] for r in empty)
            baselines[mode] = baseline
            figures[f"{mode}_flush_s"] = {
                "value": round(with_roots, 3), "unit": "s",
                "label": f"{'normal exit' if mode == 'exit' else 'SIGTERM'}: ready to "
                         f"process end with {roots} held roots (judge 10 ms a call)",
                "baseline": f"{baseline:.3f} s with no roots (same run)",
                "ratio": round(with_roots / baseline, 2)}
            figures[f"{mode}_scored"] = {
                "value": min(r[2] for r in held), "unit": "roots",
                "label": f"{mode}: fewest roots received scored of {roots}, over {repeats} runs"}
        judge.inject(Fault.HANG, times=None)
        grace = 1.0
        for mode in ("exit", "sigterm"):
            elapsed, received, _ = run_child(mode, 5, receiver, judge, grace)
            # The bound asked for, plus what the same exit takes with nothing held.
            bound = grace + SLACK_S + baselines[mode]
            figures[f"{mode}_hung_judge_s"] = {
                "value": round(elapsed, 3), "unit": "s",
                "label": f"{mode} with a judge that never answers (exit_grace_s={grace}): "
                         f"ready to process end; {received} of 5 roots received (dropped)",
                "target": f"<= {bound:.2f} s (grace {grace} + {SLACK_S} + "
                          f"{baselines[mode]:.2f} s exit with nothing held)",
                "ratio": round(elapsed / bound, 2)}
    return figures


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def timed(call: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def backend_down_figures() -> dict[str, dict[str, Any]]:
    from opentelemetry.sdk.trace import TracerProvider

    import ragas_trace
    from ragas_trace.testing.rag_spans import rag_request
    from ragas_trace.testing.scripted_judge import ScriptedJudge

    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = closed_port_url()
    figures: dict[str, dict[str, Any]] = {}
    rt = ragas_trace.setup(judge=ScriptedJudge(), exporter="otlp",
                           tracer_provider=TracerProvider(), handle_sigterm=False)
    tracer = rt.tracer_provider.get_tracer("bench")
    for _ in range(1067):  # 3 spans each: about 3,200
        rag_request(tracer)
    for name, call, deadline in (("force_flush", lambda: rt.force_flush(1.0), 1.0),
                                 ("shutdown", lambda: rt.shutdown(1.0), 1.0)):
        elapsed, result = timed(call)
        figures[f"backend_down_{name}_s"] = {
            "value": round(elapsed, 3), "unit": "s",
            "label": f"{name}({deadline}) with the OTLP endpoint down, about 3,200 spans; "
                     f"returned {result}",
            "target": f"<= {deadline + 0.5} s (deadline + 0.5 s)",
            "ratio": round(elapsed / deadline, 2)}
    queue = rt.processor._downstream
    lost = dict(getattr(queue, "lost", {}))
    figures["backend_down_lost_spans"] = {
        "value": sum(lost.values()), "unit": "spans",
        "label": f"counted in ragas_export_lost_total (3,201 request spans + one evaluation "
                 f"span per root scored in time), by reason {lost}; delivered "
                 f"{getattr(queue, 'delivered', 0)}"}

    gate = threading.Event()
    rt = ragas_trace.setup(judge=ScriptedJudge(gate=gate), exporter="otlp",
                           tracer_provider=TracerProvider(), handle_sigterm=False,
                           max_held_spans=200, queue_size=50)
    tracer = rt.tracer_provider.get_tracer("bench")
    for _ in range(2000):
        rag_request(tracer)
    elapsed, result = timed(lambda: rt.shutdown(0.5))
    gate.set()
    figures["overload_shutdown_s"] = {
        "value": round(elapsed, 3), "unit": "s",
        "label": f"shutdown(0.5) after 2,000 requests, 200 roots held by a gated judge, "
                 f"endpoint down; returned {result}",
        "target": "<= 1.0 s (deadline + 0.5 s)", "ratio": round(elapsed / 0.5, 2)}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--roots", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    figures = exit_figures(args.roots, args.repeats)
    figures.update(backend_down_figures())
    for key, figure in figures.items():
        print(f"{key}: {figure['value']} {figure.get('unit', '')}  {figure['label']}"
              f"  {figure.get('baseline', figure.get('target', ''))}")
    write_results("shutdown_deadlines", figures)


if __name__ == "__main__":
    main()
