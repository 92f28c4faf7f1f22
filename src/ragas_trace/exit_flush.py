"""Every held span leaves when the process ends, also when the app never calls
``shutdown()``, within one deadline, ``exit_grace_s`` (default 20 s: gunicorn's
``graceful_timeout`` of 30 s with 10 s for the server's own shutdown): the judge
gets up to ``JUDGE_SHARE`` of it for the held spans, the export of spans and
annotations the rest. What is still undelivered then goes to the spool (see
``exporters.spool``) for the next process; without one, held spans leave with
status ``dropped``, reason ``shutdown``, and the rest is counted lost.

- Normal interpreter exit. Python stops its thread pools (``concurrent.futures``)
  before it runs ``atexit`` functions, and the judge needs one (the event loop
  resolves host names in its executor): a judge called from ``atexit`` fails with
  "cannot schedule new futures after interpreter shutdown". So the judge's part
  runs in a hook of ``threading``'s own shutdown, registered after the thread
  pools' hook so that it runs first, and the export part in ``atexit``.
- SIGTERM. Where the app has no handler of its own (the default disposition,
  and ``setup()`` runs in the main thread), one is installed that flushes and
  then re-raises SIGTERM with the default disposition: the process ends as it
  would have, with the same exit status. ``handle_sigterm=False`` turns it off.
  Setting SIGTERM back to the default later, while a pipeline is watched, installs
  that handler instead (``signal.signal`` is wrapped for this one case): gunicorn's
  UvicornWorker does so in a worker forked after ``setup()`` ran in the master
  (``--preload``), then uvicorn captures what it finds and re-raises SIGTERM with it
  after its shutdown, and a plain default would end the worker with nothing flushed.
  Servers that handle SIGTERM themselves end either with a normal exit
  (gunicorn's workers) or by restoring the handler they found and re-raising
  the signal (uvicorn): both paths come here.
- multiprocessing children (``Process``, ``Pool`` and ``ProcessPoolExecutor``
  workers, forked or spawned) end with ``os._exit``, which skips ``atexit``: there
  a finalizer of multiprocessing's own exit function flushes instead, registered
  when ``setup()`` runs in the child or, for a child forked after it, at the fork."""

from __future__ import annotations

import atexit
import concurrent.futures.thread  # noqa: F401  (its exit hook must be registered first)
import logging
import multiprocessing
import multiprocessing.util
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from ragas_trace import _thread_signals

if TYPE_CHECKING:
    from ragas_trace.setup import RagasTrace

logger = logging.getLogger("ragas_trace")

JUDGE_SHARE = 0.6  # of exit_grace_s: the judge's; the export (and spool) has the rest

_lock = threading.Lock()
_watched: set[RagasTrace] = set()  # strong: an app may drop what setup() returned
_hooks_registered = False
_sigterm_installed = False
_finalizer_pid: int | None = None  # the process whose multiprocessing exit flushes
_guard_default = False  # a SIGTERM reset to the default installs _on_sigterm

_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
_real_signal = signal.signal  # ours bypass the wrapper


def watch(rt: RagasTrace, handle_sigterm: bool) -> None:
    """Flush ``rt`` at exit and (with ``handle_sigterm``) on SIGTERM until it is shut down."""
    global _hooks_registered
    with _lock:
        _watched.add(rt)
        register = not _hooks_registered
        _hooks_registered = True
    if register:
        _register_exit_hooks()
    if handle_sigterm:
        _install_sigterm_handler()
        _keep_default_flushing()
    if multiprocessing.parent_process() is not None:
        _flush_at_child_exit()
    multiprocessing.util.register_after_fork(rt, _forked)


def forget(rt: RagasTrace) -> None:
    with _lock:
        _watched.discard(rt)


def _register_exit_hooks() -> None:
    atexit.register(_export_at_exit)
    # The hook concurrent.futures itself uses; run in reverse order of registration,
    # before non-daemon threads are joined. Without it, the judge's part runs in
    # atexit too (and a judge that needs a thread pool fails there).
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        atexit.register(_score_at_exit)  # runs before _export_at_exit (LIFO)
        return
    try:
        register(_score_at_exit)
    except RuntimeError:  # already shutting down
        atexit.register(_score_at_exit)


def _watched_now() -> list[RagasTrace]:
    with _lock:
        return list(_watched)


def _score_at_exit() -> None:
    for rt in _watched_now():
        try:
            rt.stop_scoring()
        except Exception as exc:
            logger.warning("ragas-trace: scoring at exit failed: %s", exc)


def _export_at_exit() -> None:
    for rt in _watched_now():
        try:
            rt.export_at_exit()
        except Exception as exc:
            logger.warning("ragas-trace: shutdown at exit failed: %s", exc)


def _forked(rt: RagasTrace) -> None:
    # multiprocessing calls this in a child it forked, after clearing the finalizers
    # the parent registered.
    _flush_at_child_exit()


def _flush_at_child_exit() -> None:
    global _finalizer_pid
    if _finalizer_pid == os.getpid():
        return  # (two could only come from racing setup() calls: a second flush is a no-op)
    _finalizer_pid = os.getpid()
    # A high priority: before multiprocessing's own clean-ups (joining children, etc.).
    multiprocessing.util.Finalize(None, _flush_watched, exitpriority=100)


def _flush_watched() -> None:
    _flush_all(_watched_now())


def _install_sigterm_handler() -> None:
    global _sigterm_installed
    if _sigterm_installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
            return  # the app (or its server) handles SIGTERM: its exit path comes here
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError) as exc:  # no signals here (e.g. an embedded interpreter)
        logger.info("ragas-trace: no SIGTERM handler installed (%s)", exc)
        return
    _sigterm_installed = True


def _keep_default_flushing() -> None:
    global _guard_default
    with _lock:
        if _guard_default:
            return
        _guard_default = True
    signal.signal = _signal_keeping_flush


def _signal_keeping_flush(signalnum: int, handler: _Handler) -> _Handler:
    """``signal.signal``, except that the default disposition for SIGTERM is
    ``_on_sigterm`` (which ends as the default does) while a pipeline is watched."""
    # No lock: this may run inside a signal handler that interrupted a holder of it.
    if signalnum == signal.SIGTERM and handler == signal.SIG_DFL and _watched:
        handler = _on_sigterm
    return _real_signal(signalnum, handler)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Flush every watched pipeline, then die of SIGTERM as the default would have."""
    watched = _watched_now()
    # In a thread: the signal may have interrupted the main thread inside one of our
    # own locks; then the flush waits for nothing longer than its bound.
    flusher = threading.Thread(target=_flush_all, args=(watched,), daemon=True,
                               name="ragas-trace-sigterm")
    _thread_signals.start(flusher)
    flusher.join(sum(rt.settings.exit_grace_s for rt in watched) + 0.5)
    _real_signal(signal.SIGTERM, signal.SIG_DFL)
    signal.raise_signal(signal.SIGTERM)


def _flush_all(watched: list[RagasTrace]) -> None:
    for rt in watched:
        try:
            rt.flush_for_exit()
        except Exception as exc:
            logger.warning("ragas-trace: flush on SIGTERM failed: %s", exc)


def _reinit_after_fork() -> None:
    # Another thread may have held the lock at the fork: the child's copy stays locked.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_reinit_after_fork)
