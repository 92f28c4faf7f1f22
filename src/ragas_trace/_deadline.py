"""Blocking calls into code we do not control (SDK providers and processors, span
and metric exporters) under our deadline: some ignore the timeout they are given
(the SDK's ``BatchSpanProcessor.force_flush``), some raise when it runs out
(``MeterProvider.shutdown``: "deadline already exceeded"), and an exporter
retrying a dead endpoint can take its own 10 s per batch. Each call runs in a
daemon thread that the caller waits for until the deadline and then leaves
behind; it never raises into the app."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ragas_trace import _thread_signals

logger = logging.getLogger("ragas_trace")


def remaining(deadline: float) -> float:
    """Seconds left until ``deadline`` (a ``time.monotonic()`` value), never negative."""
    return max(0.0, deadline - time.monotonic())


def call_within(call: Callable[[], object], timeout_s: float, what: str) -> bool:
    """Run ``call()``; ``True`` if it returned within ``timeout_s`` without raising and
    did not return ``False``. A late call keeps running in its daemon thread."""
    outcome: list[bool] = []

    def run() -> None:
        try:
            outcome.append(call() is not False)
        except Exception as exc:
            logger.warning("ragas-trace: %s failed: %s", what, exc)
            outcome.append(False)

    try:
        thread = threading.Thread(target=run, name=f"ragas-trace-{what}", daemon=True)
        _thread_signals.start(thread)
    except RuntimeError:  # no new threads this late in interpreter shutdown
        run()
        return outcome[0]
    thread.join(max(0.0, timeout_s))
    if thread.is_alive():
        logger.warning("ragas-trace: %s did not finish within %.2f s", what, timeout_s)
        return False
    return outcome[0]
