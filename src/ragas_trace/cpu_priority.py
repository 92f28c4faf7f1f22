"""Idle CPU priority for a judge that shares a host with the app: it then runs only
on CPU time the app leaves, so a burst of requests is paid for with judge backlog
(bounded, and counted when it overflows), not with app latency.

On Linux the scheduling policy and the nice value belong to each thread, and a new
thread inherits its creator's. ``lower_to_idle()`` sets them on every thread the
process has (native ones too: numpy's OpenBLAS starts its pool at import), so call
it before the process starts threads of its own; they all inherit it."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger("ragas_trace")

IDLE = "idle"          # SCHED_IDLE (and nice 19, which also lowers the I/O priority)
NICE = "nice"          # nice 19 only
UNCHANGED = "unchanged"


def _threads() -> list[int]:
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]  # 0: the calling thread


def lower_to_idle() -> str:
    """Lower every thread of this process, and every thread started from now on, to
    idle CPU priority: ``SCHED_IDLE`` where available, and nice 19. Returns ``IDLE``,
    ``NICE`` or ``UNCHANGED`` (logged at WARNING); never raises."""
    idle = nice = True
    setscheduler = getattr(os, "sched_setscheduler", None)
    policy = getattr(os, "SCHED_IDLE", None)
    for tid in _threads():
        try:
            if setscheduler is None or policy is None:
                raise OSError("no SCHED_IDLE on this platform")
            setscheduler(tid, policy, os.sched_param(0))
        except OSError as exc:
            if idle:
                logger.warning("ragas-trace: cannot set SCHED_IDLE (%s); nice 19 only", exc)
            idle = False
        try:
            os.setpriority(os.PRIO_PROCESS, tid, 19)  # on Linux: that thread
        except OSError as exc:
            if nice:
                logger.warning("ragas-trace: cannot set nice 19 (%s)", exc)
            nice = False
    if idle:
        return IDLE
    if nice:
        return NICE
    logger.warning("ragas-trace: CPU priority unchanged: the judge competes with the app")
    return UNCHANGED
