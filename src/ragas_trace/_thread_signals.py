"""Our threads never take the app's signals. The kernel hands a signal sent to the
process to any thread that does not block it; Python runs the handler only in the
main thread, and a main thread blocked in a C call (``sem_wait`` in a pool worker,
``select`` in a server) is woken only when the signal lands on it. A SIGTERM taken
by one of our threads left a forked ``Pool`` worker alive after ``Pool.terminate()``.
A new thread inherits its creator's signal mask, so each of ours starts with the
app's signals blocked."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

# Asynchronous signals an app or its server acts on; faults (SIGSEGV, SIGFPE, ...)
# stay with the thread that caused them.
_APP_SIGNALS = frozenset(
    getattr(signal, name) for name in (
        "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCHLD",
        "SIGALRM", "SIGWINCH", "SIGTTIN", "SIGTTOU")
    if hasattr(signal, name))


@contextlib.contextmanager
def app_signals_blocked() -> Iterator[None]:
    """Block the app's signals in this thread for the ``with`` block: threads started
    inside it (ours, or an SDK reader's) keep them blocked for their whole life."""
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _APP_SIGNALS)
    except (AttributeError, OSError, ValueError):  # no pthread_sigmask on this platform
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start(thread: threading.Thread) -> None:
    """``thread.start()``, the thread never taking a signal meant for the app."""
    with app_signals_blocked():
        thread.start()
