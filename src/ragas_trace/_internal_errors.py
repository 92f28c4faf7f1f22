"""Our own failures: logged once per place, counted, and swallowed so the app never
sees them; re-raised when ``RAGAS_TRACE_RAISE_INTERNAL_ERRORS=1`` (set by our test
suite) so that our bugs fail tests instead of hiding."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter

logger = logging.getLogger("ragas_trace")

_lock = threading.Lock()
_counts: Counter[str] = Counter()


def raise_internal_errors() -> bool:
    return os.environ.get("RAGAS_TRACE_RAISE_INTERNAL_ERRORS", "") == "1"


def record_internal_error(where: str, exc: BaseException) -> None:
    """Count a failure at ``where``; log it with its traceback the first time only.

    Re-raises ``exc`` under the test switch. Call from an ``except`` block.
    """
    with _lock:
        _counts[where] += 1
        first = _counts[where] == 1
    if first:
        logger.warning("ragas-trace internal error in %s (logged once; counted)", where,
                       exc_info=exc)
    if raise_internal_errors():
        raise exc


def internal_error_counts() -> dict[str, int]:
    """How many internal errors each place has swallowed since start (or last reset)."""
    with _lock:
        return dict(_counts)


def reset_internal_error_counts() -> None:
    with _lock:
        _counts.clear()
