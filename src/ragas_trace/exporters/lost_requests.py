"""Requests of a process that ended before they got a status, counted as ``lost``.

Every RAG request is counted in ``ragas_requests_total`` when its root span ends
(a counter write to prometheus_client's memory-mapped file: no system call on the
app's thread) and, once settled, in ``ragas_evaluations_total`` under its status;
the spool keeps the ledger straight with ``ragas_spool_requests_total``
(``written`` by the process that spooled a request, ``claimed`` by the one that took
it over). So a process's own counter file balances once it has ended:

    requests + claimed = evaluations (every status) + written

A process killed with SIGKILL (or one whose exit path was cut short) cannot count
what it held. Whoever finds its counter file after its death, the next worker that
starts (``setup()``) or the process serving the scrape (before each one), counts
the difference as ``status="lost"`` in that same file, under a lock (a POSIX record
lock on a file in the directory, waited for 2 s at most, then left to the next
look): the file
then balances, so finding it again counts nothing twice, and a later process with
the same pid goes on from a balanced file."""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import logging
import os
import threading
import time
from collections import Counter

from ragas_trace._processes import alive
from ragas_trace.results import Metric
from ragas_trace.scorer.outcome import EvaluationStatus

logger = logging.getLogger("ragas_trace")

REQUESTS = "ragas_requests_total"
EVALUATIONS = "ragas_evaluations_total"
METRIC_EVALUATIONS = "ragas_metric_evaluations_total"
SPOOL_REQUESTS = "ragas_spool_requests_total"
LOCK_NAME = ".ragas-trace-lost.lock"
LOCK_WAIT_S = 2.0  # at most, then skipped: a scrape is never held up longer
# The help texts the counters are created with (prometheus_client keys values by them).
EVALUATIONS_HELP = "RAG requests by evaluation status"
METRIC_EVALUATIONS_HELP = "each metric of each RAG request, by what became of it"

Labels = tuple[str, str, str]  # service, app, judge


def count_lost_of_dead_processes(path: str, exclude: frozenset[int] = frozenset(),
                                 seen: dict[str, tuple[int, int]] | None = None) -> int:
    """Count as lost, in each ended process's own file under ``path``, the requests
    it neither settled nor spooled; how many. ``seen``: files already balanced, by
    (mtime, size), skipped while unchanged (a scrape's cache). Never raises for a
    file it cannot read."""
    if not _in_process.acquire(timeout=LOCK_WAIT_S):
        return 0  # another thread of this process is at it
    try:
        fd = os.open(os.path.join(path, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                     0o644)
    except OSError as exc:
        _in_process.release()
        logger.warning("ragas-trace: cannot count the requests of ended workers in %s: %s",
                       path, exc)
        return 0
    try:
        if not _lock_within(fd, LOCK_WAIT_S):
            return 0  # another process is at it; the next scrape or start looks again
        return _settle_all(path, exclude, seen)
    finally:
        os.close(fd)  # releases the record lock
        _in_process.release()


def _lock_within(fd: int, timeout_s: float) -> bool:
    """A POSIX record lock on ``fd`` within ``timeout_s``. Record locks, not
    ``flock``: they are the process's and are not inherited by a child forked while
    one is held (a pre-fork master forks its workers right after ``setup()``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def _settle_all(path: str, exclude: frozenset[int],
                seen: dict[str, tuple[int, int]] | None) -> int:
    total = 0
    mine = os.getpid()
    for file in sorted(glob.glob(os.path.join(glob.escape(path), "counter_*.db"))):
        pid = os.path.basename(file).removeprefix("counter_").removesuffix(".db")
        if not pid.isdigit() or int(pid) == mine or int(pid) in exclude \
                or alive(int(pid)):
            continue
        try:
            stat = os.stat(file)
            if seen is not None and seen.get(file) == (stat.st_mtime_ns, stat.st_size):
                continue
            total += _settle(file, int(pid))
            if seen is not None:
                stat = os.stat(file)
                seen[file] = (stat.st_mtime_ns, stat.st_size)
        except (OSError, ValueError) as exc:
            logger.warning("ragas-trace: counter file %s unreadable: %s", file, exc)
    return total


def unsettled(file: str) -> Counter[Labels]:
    """Per (service, app, judge): requests counted in ``file`` without a status."""
    from prometheus_client.mmap_dict import MmapedDict

    ledger: Counter[Labels] = Counter()
    for key, value, *_ in MmapedDict.read_all_values_from_file(file):  # type: ignore[no-untyped-call]
        _, name, labels, _ = json.loads(key)
        where = (labels.get("service", ""), labels.get("app", ""), labels.get("judge", ""))
        if name == REQUESTS:
            ledger[where] += value
        elif name == EVALUATIONS:
            ledger[where] -= value
        elif name == SPOOL_REQUESTS:
            ledger[where] += value if labels.get("event") == "claimed" else -value
    return Counter({k: round(v) for k, v in ledger.items() if round(v) > 0})


def _settle(file: str, pid: int) -> int:
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    missing = unsettled(file)
    count = sum(missing.values())
    if not count:
        return 0
    values = MmapedDict(file)  # type: ignore[no-untyped-call]
    try:
        now = time.time()
        for (service, app, judge), n in missing.items():
            _add(values, mmap_key("ragas_evaluations", EVALUATIONS,
                                  ["app", "judge", "service", "status"],
                                  [app, judge, service, str(EvaluationStatus.LOST)],
                                  EVALUATIONS_HELP), n, now)
        for metric in Metric:
            _add(values, mmap_key("ragas_metric_evaluations", METRIC_EVALUATIONS,
                                  ["metric", "status"], [str(metric),
                                                         str(EvaluationStatus.LOST)],
                                  METRIC_EVALUATIONS_HELP), count, now)
    finally:
        with contextlib.suppress(Exception):
            values.close()  # type: ignore[no-untyped-call]
    logger.warning("ragas-trace: process %d ended with %d RAG request(s) neither scored nor "
                   "kept in the spool (killed?): counted as status 'lost' in "
                   "ragas_evaluations_total", pid, count)
    return count


def _add(values: object, key: str, n: int, now: float) -> None:
    current, _ = values.read_value(key)  # type: ignore[attr-defined]
    values.write_value(key, current + n, now)  # type: ignore[attr-defined]


_in_process = threading.Lock()  # record locks do not exclude this process's threads


def _reinit_after_fork() -> None:
    # A thread of the parent may have held it at the fork: the child's copy stays locked.
    global _in_process
    _in_process = threading.Lock()


os.register_at_fork(after_in_child=_reinit_after_fork)
