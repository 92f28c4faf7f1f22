"""Requests of a process that ended without settling them are counted as ``lost``, in
prometheus_client's multiprocess files, so that requests = the sum over statuses
after a SIGKILL; a process that spooled its held requests at exit loses none, and
the next one that takes them over settles them. Real processes, real files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from prometheus_client.multiprocess import MultiProcessCollector

import ragas_trace
from ragas_trace.exporters.lost_requests import count_lost_of_dead_processes

CHILD = Path(__file__).with_name("ledger_child.py")


def run_child(multiproc: Path, spool: Path, *args: str) -> int:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "RAGAS_TRACE_", "PROMETHEUS_"))}
    env.update({"PROMETHEUS_MULTIPROC_DIR": str(multiproc), "SPOOL_DIR": str(spool),
                "PYTHONPATH": str(Path(ragas_trace.__file__).parents[1])})
    done = subprocess.run([sys.executable, str(CHILD), *args], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.strip(), done.stderr
    return int(done.stdout.strip())


def totals(multiproc: Path) -> dict[str, Counter[str]]:
    """Per series name, the merged values by ``status`` (or ``event``)."""
    out: dict[str, Counter[str]] = {}
    for metric in MultiProcessCollector(None, str(multiproc)).collect():  # type: ignore[no-untyped-call]
        for sample in metric.samples:
            key = sample.labels.get("status") or sample.labels.get("event") or ""
            out.setdefault(sample.name, Counter())[key] += int(sample.value)
    return out


def test_a_killed_process_requests_are_counted_lost_once(tmp_path):
    multiproc, spool = tmp_path / "metrics", tmp_path / "spool"
    multiproc.mkdir()
    held = run_child(multiproc, spool, "kill", "40")
    assert held > 0
    before = totals(multiproc)
    assert sum(before["ragas_requests_total"].values()) == 40
    assert sum(before["ragas_evaluations_total"].values()) == 40 - held  # not sampled only

    assert count_lost_of_dead_processes(str(multiproc)) == held
    assert count_lost_of_dead_processes(str(multiproc)) == 0  # the file balances now
    after = totals(multiproc)
    assert after["ragas_evaluations_total"]["lost"] == held
    assert sum(after["ragas_evaluations_total"].values()) == 40
    per_metric = after["ragas_metric_evaluations_total"]
    assert per_metric["lost"] == 3 * held  # each of the three metrics once


def test_a_process_that_spooled_at_exit_loses_nothing_and_the_next_settles_it(tmp_path):
    multiproc, spool = tmp_path / "metrics", tmp_path / "spool"
    multiproc.mkdir()
    held = run_child(multiproc, spool, "spool", "40")
    assert held > 0
    assert count_lost_of_dead_processes(str(multiproc)) == 0
    assert run_child(multiproc, spool, "replay") == held
    assert count_lost_of_dead_processes(str(multiproc)) == 0
    merged = totals(multiproc)
    statuses = merged["ragas_evaluations_total"]
    assert sum(merged["ragas_requests_total"].values()) == sum(statuses.values()) == 40
    assert statuses["scored"] == held and statuses["lost"] == 0
    assert merged["ragas_spool_requests_total"] == Counter({"written": held, "claimed": held})


def test_files_of_living_processes_are_left_alone(tmp_path):
    multiproc = tmp_path / "metrics"
    multiproc.mkdir()
    (multiproc / f"counter_{os.getpid()}.db").write_bytes(b"")  # this process: alive
    assert count_lost_of_dead_processes(str(multiproc)) == 0


def test_the_serving_process_counts_them_before_each_scrape(tmp_path):
    from ragas_trace.exporters.multiprocess_metrics import MultiprocessCollector

    multiproc, spool = tmp_path / "metrics", tmp_path / "spool"
    multiproc.mkdir()
    held = run_child(multiproc, spool, "kill", "20")
    assert held > 0
    collector = MultiprocessCollector(str(multiproc))
    for _ in range(2):  # the second scrape counts nothing again
        lost = [s.value for m in collector.collect() for s in m.samples
                if s.name == "ragas_evaluations_total" and s.labels["status"] == "lost"]
        assert lost == [held]


def test_a_process_killed_while_it_replays_the_spool_owes_all_it_took(tmp_path):
    multiproc, spool = tmp_path / "metrics", tmp_path / "spool"
    multiproc.mkdir()
    held = run_child(multiproc, spool, "spool", "40")
    taken = run_child(multiproc, spool, "replay-kill")
    assert taken == held > 4  # four were held, the rest waited for room
    assert count_lost_of_dead_processes(str(multiproc)) == held
    merged = totals(multiproc)
    assert sum(merged["ragas_requests_total"].values()) == sum(
        merged["ragas_evaluations_total"].values()) == 40


def test_a_worker_forked_while_the_lock_is_held_does_not_keep_it(tmp_path):
    """A pre-fork master forks its workers right after setup(), maybe while its
    counting thread holds the lock: the workers must not hold it after it is let go
    (with flock they did, and the master's scrapes waited on it)."""
    import multiprocessing
    import time

    from ragas_trace.exporters.lost_requests import LOCK_NAME, _lock_within

    path = str(tmp_path / LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    assert _lock_within(fd, 1.0)
    worker = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    worker.start()
    try:
        os.close(fd)  # the master lets go
        other = subprocess.run(  # another process takes it as the library does
            [sys.executable, "-c", "import os, sys; "
             "from ragas_trace.exporters.lost_requests import _lock_within; "
             "sys.exit(0 if _lock_within(os.open(sys.argv[1], os.O_RDWR), 0.5) else 1)",
             path], capture_output=True, text=True, timeout=30,
            env={**os.environ, "PYTHONPATH": str(Path(ragas_trace.__file__).parents[1])})
        assert other.returncode == 0, other.stderr
    finally:
        worker.terminate()
        worker.join(10)
