"""``make phoenix`` and ``make phoenix-stop``: the demo's scores in a local Arize
Phoenix, in one command.

``start`` runs ``phoenix serve`` from ``.venv-phoenix`` (or ``$RAGAS_TRACE_PHOENIX``)
on 127.0.0.1 with a free port, its database and log in ``.phoenix/``, and records its
PID in ``.phoenix/phoenix.pid``. Once Phoenix answers ``/healthz`` it runs
``ragas-trace demo`` against it with Phoenix annotations on (project named after the
service), waits until Phoenix holds every request and its annotations, prints the
URL of the project's trace list, and keeps Phoenix running until Ctrl-C or ``stop``.

``stop`` ends the Phoenix that ``start`` recorded, by that PID only, and needs no
more than the standard library (it runs without the project's virtualenv).

    python tools/phoenix_demo.py [--state DIR] start [--service-name NAME] [-- DEMO FLAGS]
    python tools/phoenix_demo.py [--state DIR] stop
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
STATE = REPO / ".phoenix"
PIDFILE_NAME = "phoenix.pid"
START_TIMEOUT_S = 180.0  # a first start migrates an empty database; a busy machine is slow
READ_BACK_S = 60.0  # Phoenix inserts in the background; early annotations retry every 10 s
STOP_TIMEOUT_S = 15.0
METRICS = ("faithfulness", "answer_relevance", "context_relevance")
_OTHER_OTLP = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
               "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
               "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"}


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def pages(url: str, **query: Any) -> list[dict[str, Any]]:
    """Every item of one of Phoenix's paginated REST lists."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {**query, **({"cursor": cursor} if cursor else {})}
        page = _get(url + ("?" + urllib.parse.urlencode(params, doseq=True) if params else ""))
        items.extend(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return items


def _alive(pid: int) -> bool:
    """Running and not a zombie (a stopped child stays in the table until reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _recorded(state: Path) -> tuple[int, str] | None:
    """(pid, url) of the Phoenix ``start`` recorded if it still runs; a stale file, or
    one whose PID now belongs to another program, is removed."""
    pidfile = state / PIDFILE_NAME
    try:
        pid_text, url = pidfile.read_text().split()[:2]
        pid = int(pid_text)
    except (OSError, ValueError):
        return None
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        command = b"phoenix"  # no /proc: trust the file while the PID is alive
    if _alive(pid) and b"phoenix" in command:
        return pid, url
    pidfile.unlink(missing_ok=True)
    return None


def terminate(pid: int) -> bool:
    """SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``; whether it has gone."""
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
    except ProcessLookupError:
        return True
    return not _alive(pid)


def stop(state: Path) -> int:
    recorded = _recorded(state)
    if recorded is None:
        print("phoenix-stop: no Phoenix started by make phoenix is running")
        return 0
    pid, url = recorded
    if not terminate(pid):
        print(f"phoenix-stop: Phoenix (pid {pid}) did not stop", file=sys.stderr)
        return 1
    (state / PIDFILE_NAME).unlink(missing_ok=True)
    print(f"phoenix-stop: stopped Phoenix (pid {pid}, {url})")
    return 0


def start_phoenix(executable: Path, state: Path) -> tuple[subprocess.Popen[bytes], str]:
    from ragas_trace.testing.phoenix_server import free_port

    state.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # Phoenix's gRPC receiver binds every interface (no host setting): a port free there.
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(state), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port("0.0.0.0")),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    with open(state / "phoenix.log", "ab") as log:
        # A session of its own: Ctrl-C reaches this script, which then stops Phoenix.
        proc = subprocess.Popen([str(executable), "serve"], env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    (state / PIDFILE_NAME).write_text(f"{proc.pid} {url}\n")
    return proc, url


def wait_ready(proc: subprocess.Popen[bytes], url: str) -> str | None:
    """``None`` once ``/healthz`` answers, else why not."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"Phoenix exited with status {proc.returncode}"
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return None
        except OSError:
            time.sleep(0.5)
    return f"Phoenix did not answer {url}/healthz within {START_TIMEOUT_S:.0f} s"


def read_back(url: str, project: str, requests: int,
               since: float) -> tuple[dict[str, Any] | None, str]:
    """The project once Phoenix holds the ``requests`` request roots started after
    ``since`` (a database kept from an earlier run holds older ones) and the
    annotations of the scored ones (at most ``READ_BACK_S``), and what it holds."""
    base = f"{url}/v1/projects/{urllib.parse.quote(project)}"
    deadline = time.monotonic() + READ_BACK_S
    found: dict[str, Any] | None = None
    held = "no project yet"
    while time.monotonic() < deadline:
        try:
            found = next((p for p in pages(url + "/v1/projects") if p["name"] == project), None)
            if found is not None:
                roots = [s for s in pages(base + "/spans", limit=1000)
                         if s["parent_id"] is None and s["span_kind"] != "EVALUATOR"
                         and datetime.fromisoformat(s["start_time"]).timestamp() >= since]
                scored = [s["context"]["span_id"] for s in roots
                          if s["attributes"].get("ragas.evaluation.status") == "scored"]
                notes = [a for a in pages(base + "/span_annotations", span_ids=scored,
                                           limit=1000) if a["name"] in METRICS] if scored else []
                held = (f"{len(roots)} of {requests} requests, {len(notes)} of "
                        f"{len(scored) * len(METRICS)} annotations of the scored ones")
                if len(roots) >= requests and len(notes) >= len(scored) * len(METRICS):
                    return found, held
        except OSError:
            pass  # Phoenix busy: try again until the deadline
        time.sleep(1.0)
    return found, held


def start(state: Path, service: str, demo_args: list[str]) -> int:
    from ragas_trace.testing.phoenix_server import phoenix_executable

    running = _recorded(state)
    if running is not None:
        print(f"make phoenix: Phoenix is already running (pid {running[0]}) at {running[1]}; "
              "make phoenix-stop stops it", file=sys.stderr)
        return 2
    executable = phoenix_executable(REPO / ".venv-phoenix")
    if executable is None:
        print("make phoenix: Phoenix is not installed: python3 -m venv .venv-phoenix && "
              ".venv-phoenix/bin/pip install arize-phoenix==20.26.1 (make phoenix does it)",
              file=sys.stderr)
        return 2
    proc, url = start_phoenix(executable, state)
    try:
        print(f"starting Phoenix on {url} (pid {proc.pid}, log {state / 'phoenix.log'})",
              flush=True)
        problem = wait_ready(proc, url)
        if problem is not None:
            print(f"make phoenix: {problem}; see {state / 'phoenix.log'}", file=sys.stderr)
            return 1
        requests, since = requests_of(demo_args), time.time()
        status = send_demo(url, service, demo_args)
        if status != 0:
            print(f"make phoenix: the demo exited with status {status}", file=sys.stderr)
            return status
        project, held = read_back(url, service, requests, since)
        if project is None:
            print(f"make phoenix: Phoenix shows no project {service!r} after "
                  f"{READ_BACK_S:.0f} s", file=sys.stderr)
            return 1
        print(f"\nPhoenix holds {held}.")
        print(f"Traces: {url}/projects/{project['id']}/traces", flush=True)
        for line in where_the_scores_are(executable):
            print(line)
        print(f"Phoenix keeps running (pid {proc.pid}): Ctrl-C here, or make phoenix-stop, "
              "stops it.", flush=True)
        proc.wait()
        print("Phoenix stopped.")
        return 0
    except KeyboardInterrupt:
        print("\nstopping Phoenix...", flush=True)
        return 0
    finally:
        if proc.poll() is None:
            terminate(proc.pid)
            proc.wait(STOP_TIMEOUT_S)
        pidfile = state / PIDFILE_NAME
        if pidfile.is_file() and pidfile.read_text().split()[:1] == [str(proc.pid)]:
            pidfile.unlink()


def where_the_scores_are(executable: Path) -> list[str]:
    """What to click for the scores (Phoenix 20.26.1 shows no score column by
    default), and what the first run cost when the Makefile measured it."""
    lines = ["Scores: click a trace: its header shows faithfulness, answer relevance and "
             "context relevance;",
             "        or, in the trace list, Columns -> faithfulness for a column of scores."]
    try:
        seconds, megabytes = (int(v) for v in
                              (executable.parents[1] / "install.txt").read_text().split())
    except (OSError, ValueError):
        return lines  # installed another way: nothing measured
    lines.append(f"First run: Phoenix installed in {seconds // 60} min {seconds % 60} s, "
                 f"{megabytes} MB in {executable.parents[1]}; later runs reuse it.")
    return lines


def send_demo(url: str, service: str, demo_args: list[str]) -> int:
    """Runs ``ragas-trace demo`` against the Phoenix at ``url`` with Phoenix
    annotations on; its exit status."""
    # Traces only, over OTLP/HTTP: Phoenix takes no OTLP metrics (405), and an OTLP
    # endpoint or protocol set for another backend must not redirect the demo.
    env = {k: v for k, v in os.environ.items() if k not in _OTHER_OTLP}
    env.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{url}/v1/traces",
                "RAGAS_TRACE_ANNOTATIONS": "phoenix", "PHOENIX_COLLECTOR_ENDPOINT": url})
    demo = subprocess.run([sys.executable, "-c", "import sys; from ragas_trace.cli.main "
                           "import main; sys.exit(main())", "demo",
                           "--service-name", service, *demo_args], env=env, check=False)
    return demo.returncode


def requests_of(demo_args: list[str]) -> int:
    """The demo's ``--requests`` (default 40): how many traces to wait for."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--requests", type=int, default=40)
    return int(parser.parse_known_args(demo_args)[0].requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", type=Path, default=STATE,
                        help="Phoenix's database, log and pidfile (default .phoenix)")
    sub = parser.add_subparsers(dest="command", required=True)
    begin = sub.add_parser("start", help="start Phoenix, send the demo, print the URL")
    begin.add_argument("--service-name", default=None,
                       help="service, and so Phoenix project, of the demo's traces "
                            "(default: the demo's)")
    begin.add_argument("demo_args", nargs=argparse.REMAINDER,
                       help="after --: flags for ragas-trace demo (--requests N...)")
    sub.add_parser("stop", help="stop the Phoenix that start recorded")
    args = parser.parse_args(argv)
    if args.command == "stop":
        return stop(args.state)
    from ragas_trace.demo.runner import DEFAULT_SERVICE

    # SIGTERM ends the run as Ctrl-C does: Phoenix is stopped, the pidfile removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    demo_args = args.demo_args[1:] if args.demo_args[:1] == ["--"] else args.demo_args
    service = args.service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE
    return start(args.state, service, demo_args)


if __name__ == "__main__":
    sys.exit(main())
