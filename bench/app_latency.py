"""App latency as users feel it: real servers on 127.0.0.1, a steady request rate,
three set-ups of the same FastAPI RAG app (bench/latency_app.py), each in processes
of its own:

- ``none``: the app without ragas-trace (the baseline);
- ``sidecar``: the recommended set-up, ``setup(judge="off")`` in the app exporting
  OTLP to one ``ragas-trace serve`` per host (local judge, idle CPU priority: its
  default on loopback);
- ``inprocess``: ``setup()`` with the local judge in every app process.

Each set-up runs (i) under gunicorn with 4 ``UvicornWorker``s and (ii) as one uvicorn
process. Spans leave to a discarding OTLP receiver at nice 19 that stands for the
next hop (a collector on another host); its CPU is not the set-up's. Phases of each
arm alternate round by round (the order rotates), with the machine let settle between
them (the judge's backlog drained), so background load hits every arm alike.
Latency is counted from each request's scheduled send time (open loop: a request
the client could not send on time waits, as a user would).

The rate: unless ``--rate`` is given, the recommended set-up is run at a trial rate
under gunicorn, the CPU time its processes (app, sidecar, client) used per request
is read from /proc, and the rate is chosen to keep half of the machine's cores busy
with it: ``rate = cores / 2 / cpu_s_per_request``.

Memory per host: the sum of the RSS (and of the PSS, which counts pages shared
between forked workers once) of every process of the set-up, after its phases.

    python bench/app_latency.py                      # about 10 minutes on 2 cores
    python bench/app_latency.py --rounds 4 --phase-s 30
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from results_file import repeated, write_results

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
ARMS = ("none", "sidecar", "inprocess")
EXTRA_ARMS = ("export-only", "lower-bound", "inprocess-idle")
WHAT = {"sidecar": "judge in a sidecar at idle priority (recommended)",
        "export-only": "judge='off' exporting to the next hop, nothing scored (the "
                       "tracing's own cost)",
        "lower-bound": "a handler making the same spans, built in advance, through the "
                       "SDK and exporting them like export-only (what any SDK-based "
                       "handler costs at least)",
        "inprocess": "local judge in every app process",
        "inprocess-idle": "local judge in every app process, its threads at idle priority"}
CLIENT_THREADS = 16
CORES = os.cpu_count() or 1
TICKS = os.sysconf("SC_CLK_TCK")


# -- processes ------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(parents.get(p, []))
    return found


def cpu_s(pids: Sequence[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICKS


def memory_mib(pids: Sequence[int]) -> tuple[float, float]:
    """(sum of RSS, sum of PSS) in MiB."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]

    def pids(self) -> list[int]:
        return children(self.popen.pid) if self.popen.poll() is None else []

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGAS_TRACE_", "RAGAS_GATEWAY_", "OTEL_",
                                "PROMETHEUS_MULTIPROC_DIR"))}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), str(BENCH), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def start_sink() -> tuple[Proc, int]:
    port = free_port()
    popen = subprocess.Popen([sys.executable, __file__, "--sink", str(port)],
                             env=base_env(), stdout=subprocess.PIPE)
    assert popen.stdout is not None
    popen.stdout.readline()  # "ready"
    return Proc("sink", popen), port


SIDECAR_IDLE_PRIORITY = ["auto"]  # --sidecar-idle-priority


def start_sidecar(sink_port: int) -> tuple[Proc, int, int, str]:
    env = base_env()
    popen = subprocess.Popen(
        [sys.executable, "-m", "ragas_trace.cli.main", "serve", "--otlp-grpc", "off",
         "--otlp-http", "127.0.0.1:0", "--forward-protocol", "http",
         "--forward-endpoint", f"http://127.0.0.1:{sink_port}", "--judge", "local",
         "--metrics-port", "0", "--idle-priority", SIDECAR_IDLE_PRIORITY[0],
         "--log-format", "text", "--log-level", "warning"],
        env=env, stdout=subprocess.PIPE)
    assert popen.stdout is not None
    ready = json.loads(popen.stdout.readline())
    http_port = int(ready["otlp_http"].rsplit(":", 1)[1])
    return Proc("sidecar", popen), http_port, int(ready["metrics_port"]), \
        str(ready.get("cpu_priority"))


def start_server(shape: str, arm: str, otlp_port: int) -> tuple[Proc, int]:
    port = free_port()
    env = base_env()
    env["LATENCY_ARM"] = arm
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{otlp_port}"
    env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http/protobuf"
    if shape == "gunicorn":
        cmd = [sys.executable, "-m", "gunicorn", "latency_app:app", "--chdir", str(BENCH),
               "-k", "uvicorn.workers.UvicornWorker", "-w", "4", "-b", f"127.0.0.1:{port}",
               "--keep-alive", "300", "--log-level", "warning"]
    else:
        cmd = [sys.executable, "-m", "uvicorn", "latency_app:app", "--app-dir", str(BENCH),
               "--host", "127.0.0.1", "--port", str(port), "--timeout-keep-alive", "300",
               "--log-level", "warning"]
    popen = subprocess.Popen(cmd, env=env, cwd=str(BENCH))
    proc = Proc(f"{shape}/{arm}", popen)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            raise RuntimeError(f"{proc.name} exited with {popen.returncode}")
        try:
            ask(port, "warm-up #1", timeout=5)
            return proc, port
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{proc.name} did not answer in 120 s")


def ask(port: int, question: str, timeout: float = 30,
        conn: http.client.HTTPConnection | None = None) -> None:
    own = conn is None
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/ask", json.dumps({"question": question}),
                  {"Content-Type": "application/json"})
        response = c.getresponse()
        response.read()
        if response.status != 200:
            raise OSError(f"status {response.status}")
    finally:
        if own:
            c.close()


# -- load -----------------------------------------------------------------------------

_counter = iter(range(10**9))


def run_phase(port: int, rate: float, seconds: float) -> list[float]:
    """Open-loop requests at ``rate``/s for ``seconds``; latencies (s) counted from
    each request's scheduled time."""
    jobs: queue.Queue[float | None] = queue.Queue()
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while (at := jobs.get()) is not None:
            delay = at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            question = f"When was it built and who restored it? #{next(_counter)}"
            try:
                try:
                    ask(port, question, conn=conn)
                except (BrokenPipeError, ConnectionResetError,
                        http.client.RemoteDisconnected):
                    # A kept-alive connection the server closed: a browser reconnects too.
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    ask(port, question, conn=conn)
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                with lock:
                    failures.append(str(exc))
                continue
            done = time.perf_counter()
            with lock:
                latencies.append(done - at)
        conn.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(CLIENT_THREADS)]
    for t in threads:
        t.start()
    start = time.perf_counter() + 0.2
    for i in range(int(rate * seconds)):
        jobs.put(start + i / rate)
    for _ in threads:
        jobs.put(None)
    for t in threads:
        t.join(seconds + 120)
    if failures:
        print(f"  {len(failures)} failed requests, e.g. {failures[0]}", file=sys.stderr)
    return latencies


def settle(pids: Callable[[], list[int]], busy: Callable[[], bool] = lambda: False,
           max_s: float = 60.0) -> float:
    """Wait until the set-up's processes are quiet (under 5 % of a core over half a
    second, and ``busy()`` false): the judge's backlog of the last phase must not
    weigh on the next arm's. Returns the seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < max_s:
        before = cpu_s(pids())
        time.sleep(0.5)
        if cpu_s(pids()) - before < 0.025 and not busy():
            break
    return time.monotonic() - start


# -- the sidecar's counts ------------------------------------------------------------

_SERIES = re.compile(r'^(ragas_evaluations_total|ragas_scorer_dropped_total)\{([^}]*)\}\s+'
                     r'([0-9.e+]+)', re.M)


def sidecar_counts(metrics_port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    counts: dict[str, float] = {}
    for name, labels, value in _SERIES.findall(text):
        key = re.search(r'(status|reason)="([^"]*)"', labels)
        label = f"{'dropped:' if 'dropped' in name else ''}{key[2] if key else '?'}"
        counts[label] = counts.get(label, 0.0) + float(value)
    return counts


def sidecar_busy(http_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/health", timeout=5) as r:
            health = json.loads(r.read())
    except OSError:
        return False
    scoring = health.get("scoring", {})
    return bool(health.get("held_traces") or scoring.get("held_for_scoring")
                or scoring.get("scorer_queue"))


# -- one server shape -----------------------------------------------------------------

@dataclass
class ArmResult:
    latencies: list[float] = field(default_factory=list)
    by_round: list[list[float]] = field(default_factory=list)
    rss_mib: float = 0.0
    pss_mib: float = 0.0


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_shape(shape: str, rate: float, rounds: int, phase_s: float, sink_port: int,
              arms: tuple[str, ...]) -> tuple[dict[str, ArmResult], dict[str, Any]]:
    sidecar, sidecar_port, metrics_port, priority = start_sidecar(sink_port)
    servers: dict[str, tuple[Proc, int]] = {}
    try:
        for arm in arms:
            servers[arm] = start_server(shape, arm,
                                        sidecar_port if arm == "sidecar" else sink_port)

        def pids(arm: str) -> list[int]:
            own = servers[arm][0].pids()
            return own + sidecar.pids() if arm == "sidecar" else own

        def busy(arm: str) -> bool:
            return arm == "sidecar" and sidecar_busy(sidecar_port)

        # Warm-up: every worker answers and loads its judge (in-process) once.
        for arm in arms:
            run_phase(servers[arm][1], 4.0, 8.0)
            settle(lambda a=arm: pids(a), lambda a=arm: busy(a))
        results = {arm: ArmResult() for arm in arms}
        sent = 0
        before = sidecar_counts(metrics_port)
        for r in range(rounds):
            order = arms[r % len(arms):] + arms[:r % len(arms)]
            for arm in order:
                lat = run_phase(servers[arm][1], rate, phase_s)
                sent += len(lat) if arm == "sidecar" else 0
                results[arm].latencies += lat
                results[arm].by_round.append(lat)
                waited = settle(lambda a=arm: pids(a), lambda a=arm: busy(a))
                print(f"  {shape} round {r + 1} {arm:9s} p50 {quantile(lat, .5) * 1e3:6.1f} "
                      f"ms p95 {quantile(lat, .95) * 1e3:6.1f} ms (n {len(lat)}, "
                      f"settled in {waited:.1f} s)", file=sys.stderr)
        for arm in arms:
            results[arm].rss_mib, results[arm].pss_mib = memory_mib(pids(arm))
        after = sidecar_counts(metrics_port)
        counts = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
        return results, {"sidecar_priority": priority, "sidecar_requests": sent,
                         "sidecar_counts": counts}
    finally:
        for proc, _ in servers.values():
            proc.stop()
        sidecar.stop()


def calibrate(trial_rate: float, seconds: float, sink_port: int) -> tuple[float, float]:
    """CPU seconds per request of the recommended set-up under gunicorn (app workers,
    sidecar with its judge, the client), and the rate that keeps half the cores busy."""
    sidecar, sidecar_port, _, _ = start_sidecar(sink_port)
    server = None
    try:
        server, port = start_server("gunicorn", "sidecar", sidecar_port)

        def pids() -> list[int]:
            return server.pids() + sidecar.pids() if server is not None else []

        run_phase(port, trial_rate, 6.0)  # warm-up: the sidecar loads its judge
        settle(pids, lambda: sidecar_busy(sidecar_port))
        me = [os.getpid()]
        before = cpu_s(pids()) + cpu_s(me)
        n = len(run_phase(port, trial_rate, seconds))
        settle(pids, lambda: sidecar_busy(sidecar_port))
        per_request = (cpu_s(pids()) + cpu_s(me) - before) / max(1, n)
    finally:
        if server is not None:
            server.stop()
        sidecar.stop()
    rate = max(1.0, min(40.0, round(CORES / 2 / per_request * 2) / 2))
    return per_request, rate


# -- the sink -------------------------------------------------------------------------

def serve_sink(port: int) -> None:
    """A discarding OTLP/HTTP receiver at nice 19: the next hop, standing for a
    collector on another host."""
    os.nice(19)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    self.rfile.read(size + 2)
                self.rfile.readline()
            else:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    server.serve_forever()


# -- main -----------------------------------------------------------------------------

def figures(shape: str, results: dict[str, ArmResult], extra: dict[str, Any],
            rate: float) -> dict[str, dict[str, Any]]:
    base = results["none"]
    where = "4 UvicornWorkers under gunicorn" if shape == "gunicorn" else "one uvicorn process"
    out: dict[str, dict[str, Any]] = {}
    for arm in results:
        if arm == "none":
            continue
        what = WHAT[arm]
        for q, target in ((0.5, "<= 1.10"), (0.95, "<= 1.20")):
            pct = int(q * 100)
            runs = [quantile(a, q) / quantile(b, q)
                    for a, b in zip(results[arm].by_round, base.by_round, strict=True)]
            out[f"{shape}.{arm}.p{pct}_ratio"] = {
                **repeated(runs, 3),
                "label": f"App p{pct} latency, {where}, {what}, every request scored, "
                         f"{rate:g} req/s (each round's ratio)",
                "baseline": f"the same app without ragas-trace, p{pct} "
                            f"{quantile(base.latencies, q) * 1e3:.1f} ms",
                "target": target}
    for arm, res in results.items():
        out[f"{shape}.{arm}.p50_ms"] = {"value": round(quantile(res.latencies, .5) * 1e3, 2),
                                        "unit": "ms", "label": f"{shape} {arm}: p50 latency"}
        out[f"{shape}.{arm}.p95_ms"] = {"value": round(quantile(res.latencies, .95) * 1e3, 2),
                                        "unit": "ms", "label": f"{shape} {arm}: p95 latency"}
        out[f"{shape}.{arm}.requests"] = {"value": len(res.latencies), "exact": True,
                                          "label": f"{shape} {arm}: requests timed"}
        out[f"{shape}.{arm}.rss_mib"] = {
            "value": round(res.rss_mib, 1), "unit": "MiB",
            "label": f"Memory per host, {where}, {arm}: sum of the RSS of every process "
                     "of the set-up (app server" + (" + sidecar)" if arm == "sidecar" else ")")}
        out[f"{shape}.{arm}.pss_mib"] = {
            "value": round(res.pss_mib, 1), "unit": "MiB",
            "label": f"{shape} {arm}: sum of the PSS (shared pages counted once)"}
    if "sidecar" not in results:
        return out
    counts = extra["sidecar_counts"]
    out[f"{shape}.sidecar.scored"] = {
        "value": counts.get("scored", 0.0), "exact": True,
        "label": f"{shape}: requests the sidecar scored during the timed phases, of "
                 f"{extra['sidecar_requests']} (statuses: "
                 + ", ".join(f"{k} {v:g}" for k, v in sorted(counts.items())) + ")"}
    out[f"{shape}.sidecar.cpu_priority"] = {"value": extra["sidecar_priority"],
                                            "label": "the sidecar's CPU priority"}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=None,
                        help="requests/s (default: calibrated to keep half the cores busy)")
    parser.add_argument("--trial-rate", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--phase-s", type=float, default=15.0)
    parser.add_argument("--shapes", default="gunicorn,uvicorn")
    parser.add_argument("--arms", default=",".join(ARMS),
                        help=f"set-ups to run, 'none' first (also: {', '.join(EXTRA_ARMS)})")
    parser.add_argument("--sidecar-idle-priority", default="auto",
                        choices=("auto", "true", "false"),
                        help="the sidecar's --idle-priority (default: its own, on here)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--sink", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sink is not None:
        serve_sink(args.sink)
        return 0
    SIDECAR_IDLE_PRIORITY[0] = args.sidecar_idle_priority
    arms = tuple(args.arms.split(","))
    if arms[0] != "none" or not set(arms) <= {*ARMS, *EXTRA_ARMS}:
        parser.error(f"--arms: 'none' first, then some of {ARMS[1:] + EXTRA_ARMS}")
    # SIGTERM ends the run through the ``finally`` blocks, which stop every server.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sink, sink_port = start_sink()
    out: dict[str, dict[str, Any]] = {}
    try:
        rate = args.rate
        if rate is None:
            per_request, rate = calibrate(args.trial_rate, 15.0, sink_port)
            print(f"calibrated: {per_request * 1e3:.1f} ms of CPU per request -> "
                  f"{rate:g} req/s", file=sys.stderr)
            out["cpu_ms_per_request"] = {
                "value": round(per_request * 1e3, 1), "unit": "ms",
                "label": "CPU time per request of the recommended set-up under gunicorn "
                         "(app workers, sidecar and its judge, client), at "
                         f"{args.trial_rate:g} req/s; the rate keeps {CORES} / 2 cores busy"}
        out["rate"] = {"value": rate, "unit": "req/s", "label": "steady request rate"}
        for shape in args.shapes.split(","):
            results, extra = run_shape(shape, rate, args.rounds, args.phase_s, sink_port,
                                       arms)
            out.update(figures(shape, results, extra, rate))
            for arm, res in results.items():
                print(f"{shape:8s} {arm:9s} p50 {quantile(res.latencies, .5) * 1e3:6.1f} ms "
                      f"p95 {quantile(res.latencies, .95) * 1e3:6.1f} ms "
                      f"RSS {res.rss_mib:7.1f} MiB PSS {res.pss_mib:7.1f} MiB")
    finally:
        sink.stop()
    print(json.dumps({k: v["value"] for k, v in out.items()}, indent=1))
    if not args.no_write:
        write_results("app_latency", out, merge=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
