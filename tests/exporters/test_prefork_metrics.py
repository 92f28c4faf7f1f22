"""Pre-fork servers with ``metrics_port`` set, as docs/guides/production.md tells an
operator to run them: a real gunicorn (sync and UvicornWorker, with and without
``--preload``) and ``uvicorn --workers``, 4 workers each, ``PROMETHEUS_MULTIPROC_DIR``
set, each worker scoring with the scripted judge, and a real Prometheus (Debian's)
scraping the metrics port. Every worker starts; Prometheus reads exactly the
requests scored, summed over the workers; a worker killed by its pid (SIGKILL: no
exit code runs) and restarted loses none of its counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import ragas_trace

sys.path.insert(0, str(Path(__file__).parents[1] / "demo"))
from prometheus_harness import Prometheus, free_port, scraping_or_skip

APP_DIR = Path(__file__).parent
WORKERS = 4
REQUESTS = 12  # before the kill, and again after it
pytestmark = pytest.mark.slow

SERVERS = {
    "gunicorn-sync": ["-m", "gunicorn", "prefork_app:wsgi_app", "--chdir", str(APP_DIR)],
    "gunicorn-sync-preload": ["-m", "gunicorn", "prefork_app:wsgi_app", "--chdir",
                              str(APP_DIR), "--preload"],
    "gunicorn-uvicorn": ["-m", "gunicorn", "prefork_app:app", "--chdir", str(APP_DIR),
                         "-k", "uvicorn.workers.UvicornWorker"],
    "gunicorn-uvicorn-preload": ["-m", "gunicorn", "prefork_app:app", "--chdir", str(APP_DIR),
                                 "-k", "uvicorn.workers.UvicornWorker", "--preload"],
    "uvicorn-workers": ["-m", "uvicorn", "prefork_app:app", "--app-dir", str(APP_DIR)],
}


def command(server: str, port: int) -> list[str]:
    if server.startswith("gunicorn"):
        return [*SERVERS[server], "--workers", str(WORKERS), "--bind", f"127.0.0.1:{port}",
                "--log-level", "warning"]
    return [*SERVERS[server], "--workers", str(WORKERS), "--port", str(port),
            "--log-level", "warning"]


@pytest.fixture(scope="module")
def metrics_ports() -> dict[str, int]:
    return {server: free_port() for server in SERVERS}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory,
               metrics_ports: dict[str, int]) -> Iterator[Prometheus]:
    with scraping_or_skip(tmp_path_factory.mktemp("prometheus"), metrics_ports) as prom:
        yield prom


def server_env(multiproc_dir: Path, metrics_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "RAGAS_TRACE_", "PROMETHEUS_"))}
    env.update({
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc_dir),
        "RAGAS_TRACE_METRICS_PORT": str(metrics_port),
        "RAGAS_TRACE_RAISE_INTERNAL_ERRORS": "1",
        "PYTHONPATH": os.pathsep.join(
            [str(Path(ragas_trace.__file__).parents[1]), env.get("PYTHONPATH", "")]),
    })
    return env


def get(port: int) -> tuple[int, bool]:
    """One request; the pid of the worker that served it and whether it serves metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as reply:
        pid, serving = reply.read().decode().split()
    return int(pid), serving == "1"


def serve(port: int, count: int, deadline_s: float = 30) -> dict[int, bool]:
    """``count`` requests answered; the workers that answered them. Only a refused
    connection is tried again: any other failure may have reached the app, and the
    count of scored requests would no longer be known."""
    deadline = time.monotonic() + deadline_s
    workers: dict[int, bool] = {}
    served = 0
    while served < count:
        try:
            pid, serving = get(port)
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionRefusedError) \
                    or time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # not listening yet
            continue
        workers[pid] = serving
        served += 1
    return workers


def children(pid: int) -> set[int]:
    """The server's live worker processes (not multiprocessing's resource tracker,
    which uvicorn's spawned workers start)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and b"resource_tracker" not in cmdline:
            found.add(int(stat.parent.name))
    return found


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 90,
             state: Callable[[], object] = lambda: "") -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}: {state()}")
        time.sleep(0.2)


def scraped(prom: Prometheus, job: str, metric: str, matchers: str = "") -> float | None:
    result = prom.query(f'sum({metric}{{job="{job}"{matchers}}})')
    return float(result[0]["value"][1]) if result else None


@pytest.mark.parametrize("server", list(SERVERS))
def test_prometheus_reads_every_workers_scores(server, prometheus, metrics_ports, tmp_path):
    pytest.importorskip("gunicorn" if server.startswith("gunicorn") else "uvicorn")
    pytest.importorskip("uvicorn")
    multiproc = tmp_path / "metrics"
    multiproc.mkdir()
    port = free_port()
    log = (tmp_path / "server.log").open("w+")
    child = subprocess.Popen([sys.executable, *command(server, port)], cwd=APP_DIR,
                             env=server_env(multiproc, metrics_ports[server]),
                             stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for("4 workers", lambda: len(children(child.pid)) >= WORKERS)
        workers = serve(port, REQUESTS)

        def counted() -> float | None:
            return scraped(prometheus, server, "ragas_evaluations_total", ',status="scored"')

        def state() -> object:
            return prometheus.query(f'sum by (status) (ragas_evaluations_total{{job="{server}"}})')

        # The evaluation counter and the score histogram are written one after the
        # other: a scrape can fall between them, so both are waited for.
        wait_for(f"{REQUESTS} scored requests in Prometheus",
                 lambda: counted() == REQUESTS and scraped(
                     prometheus, server, "ragas_faithfulness_count") == REQUESTS,
                 state=state)
        assert scraped(prometheus, server, "ragas_faithfulness_count") == REQUESTS
        # The worker to kill: one whose counts would be lost with it; the one serving
        # the metrics port if it scored any (its successor must serve them again).
        victims = sorted(workers, key=lambda pid: (not workers[pid], pid))
        victim = next(pid for pid in victims if pid != child.pid)
        os.kill(victim, signal.SIGKILL)
        wait_for("the killed worker's replacement",
                 lambda: victim not in children(child.pid)
                 and len(children(child.pid)) >= WORKERS)
        serve(port, REQUESTS)
        wait_for(f"{2 * REQUESTS} scored requests in Prometheus",
                 lambda: counted() == 2 * REQUESTS, state=state)
        assert scraped(prometheus, server, "ragas_faithfulness_count") == 2 * REQUESTS
        assert scraped(prometheus, server, "ragas_evaluations_total",
                       ',status!="scored"') in (
            None, 0.0)
        assert child.poll() is None
    finally:
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        log.seek(0)
        output = log.read()
        log.close()
    # No worker failed to start, and setup() raised nowhere.
    assert "Traceback" not in output and "Worker failed to boot" not in output, output
