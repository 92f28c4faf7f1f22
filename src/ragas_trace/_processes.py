"""Whether a process still runs, for the files processes leave behind them
(multiprocess metrics, the spool, markers)."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether a process with this pid runs (one of another user's counts as running;
    so does a zombie, until its parent reaps it)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
