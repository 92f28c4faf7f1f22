"""Held roots leave when the process ends without ``shutdown()``: at a normal exit,
on SIGTERM (our handler), and under uvicorn (its own handler). A real child process,
the real OpenAI client against the loopback fake server, OTLP/HTTP to a loopback
receiver."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragas_trace
from ragas_trace import semconv as sc
from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault
from ragas_trace.testing.otlp_receiver import OtlpHttpReceiver, WireSpan

APP = Path(__file__).with_name("exit_app.py")
pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[OtlpHttpReceiver]:
    with OtlpHttpReceiver() as rx:
        yield rx


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(latency_s=0.01) as server:
        yield server


def child_env(receiver: OtlpHttpReceiver, judge: FakeOpenAIServer,
              grace_s: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "RAGAS_TRACE_", "OPENAI_"))}
    env.update({
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OPENAI_BASE_URL": judge.base_url, "OPENAI_API_KEY": "test",
        "RAGAS_TRACE_EXIT_GRACE_S": str(grace_s),
        "RAGAS_TRACE_RAISE_INTERNAL_ERRORS": "1",
        # The child runs in tests/exit: the sources under test, not an installed copy.
        "PYTHONPATH": os.pathsep.join(
            [str(Path(ragas_trace.__file__).parents[1]), env.get("PYTHONPATH", "")]),
    })
    return env


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    # Its own process group: the app and the pool workers it forks, which finish()
    # can stop together if one outlives the app holding its pipes.
    return subprocess.Popen([sys.executable, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=APP.parent,
                            start_new_session=True)


def wait_ready(child: subprocess.Popen[str]) -> None:
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.strip() == "ready", child.stderr.read() if child.stderr else line


def signal_masks(pid: int) -> str:
    """Each thread's name and its blocked, ignored and caught signals, to say why a
    child did not take a signal."""
    lines = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*")):
        with contextlib.suppress(OSError):
            status = dict(line.split(":", 1) for line in
                          (task / "status").read_text().splitlines() if ":" in line)
            lines.append(" ".join(f"{key}={status.get(key, '').strip()}" for key in
                                  ("Name", "State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn",
                                   "SigCgt")))
    return "\n".join(lines)


def finish(child: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        _, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        masks = signal_masks(child.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        _, err = child.communicate()
        pytest.fail(f"the child or a process it forked did not end: {err}\n{masks}")
    return child.returncode, err


def roots(receiver: OtlpHttpReceiver) -> list[WireSpan]:
    return [s for s in receiver.spans() if s.name == "rag"]


def statuses(receiver: OtlpHttpReceiver) -> list[tuple[str, str | None]]:
    return [(s.attributes.get(sc.RAGAS_EVALUATION_STATUS),
             s.attributes.get(sc.RAGAS_EVALUATION_REASON)) for s in roots(receiver)]


def test_normal_exit_scores_every_held_root(receiver, judge_server):
    child = start([str(APP), "exit", "10"], child_env(receiver, judge_server, grace_s=20))
    code, err = finish(child)
    assert code == 0, err
    assert statuses(receiver) == [("scored", None)] * 10, err


def test_normal_exit_past_the_grace_drops_as_shutdown_not_failed(receiver, judge_server):
    judge_server.inject(Fault.HANG, times=None)
    child = start([str(APP), "exit", "5"], child_env(receiver, judge_server, grace_s=0.5))
    code, err = finish(child)
    assert code == 0, err
    assert statuses(receiver) == [("dropped", "shutdown")] * 5, err


def test_sigterm_flushes_then_dies_of_sigterm(receiver, judge_server):
    child = start([str(APP), "sigterm", "30"], child_env(receiver, judge_server, grace_s=20))
    wait_ready(child)
    child.send_signal(signal.SIGTERM)
    code, err = finish(child)
    assert code == -signal.SIGTERM, err  # the default disposition's exit status
    assert statuses(receiver) == [("scored", None)] * 30, err


def test_sigterm_past_the_grace_drops_as_shutdown(receiver, judge_server):
    judge_server.inject(Fault.HANG, times=None)
    child = start([str(APP), "sigterm", "5"], child_env(receiver, judge_server, grace_s=0.5))
    wait_ready(child)
    child.send_signal(signal.SIGTERM)
    code, err = finish(child)
    assert code == -signal.SIGTERM, err
    assert statuses(receiver) == [("dropped", "shutdown")] * 5, err


def test_an_uncaught_exception_still_scores_every_held_root(receiver, judge_server):
    child = start([str(APP), "raise", "5"], child_env(receiver, judge_server, grace_s=20))
    code, err = finish(child)
    assert code == 1 and "RuntimeError: the app failed" in err, err
    assert statuses(receiver) == [("scored", None)] * 5, err


def test_ctrl_c_scores_every_held_root(receiver, judge_server):
    # SIGINT is Python's KeyboardInterrupt: ragas-trace installs nothing for it, and
    # the normal exit path flushes. The exit status stays the interpreter's.
    child = start([str(APP), "sigterm", "5"], child_env(receiver, judge_server, grace_s=20))
    wait_ready(child)
    child.send_signal(signal.SIGINT)
    code, err = finish(child)
    assert code != 0 and "KeyboardInterrupt" in err, err
    assert statuses(receiver) == [("scored", None)] * 5, err


@pytest.mark.parametrize("mode", ["process", "pool", "pool-with"])
def test_forked_multiprocessing_children_score_every_held_root(receiver, judge_server, mode):
    # Their exit is os._exit (no atexit); `with Pool` ends its workers with SIGTERM.
    child = start([str(APP), mode, "6"], child_env(receiver, judge_server, grace_s=20))
    code, err = finish(child)
    assert code == 0, err
    assert statuses(receiver) == [("scored", None)] * 6, err


def test_handle_sigterm_off_leaves_the_default(receiver, judge_server):
    env = {**child_env(receiver, judge_server, grace_s=20), "RAGAS_TRACE_HANDLE_SIGTERM": "0"}
    child = start([str(APP), "sigterm", "3"], env)
    wait_ready(child)
    child.send_signal(signal.SIGTERM)
    code, err = finish(child)
    assert code == -signal.SIGTERM, err
    assert roots(receiver) == []  # what the default does: nothing flushed


def test_the_apps_own_handler_is_kept_and_its_exit_flushes(receiver, judge_server):
    child = start([str(APP), "own", "5"], child_env(receiver, judge_server, grace_s=20))
    wait_ready(child)
    child.send_signal(signal.SIGTERM)
    code, err = finish(child)
    assert code == 3, err  # the app's handler ran and exited; the normal exit flushed
    assert statuses(receiver) == [("scored", None)] * 5, err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(port: int, count: int) -> None:
    deadline = time.monotonic() + 30
    served = 0
    while served < count and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as reply:
                served += reply.status == 200
        except OSError:
            time.sleep(0.1)  # not listening yet
    assert served == count


@pytest.mark.parametrize("app", ["exit_app", "lifespan_app"],
                         ids=["setup-at-import", "setup-in-lifespan"])
def test_uvicorn_app_flushes_on_sigterm(receiver, judge_server, app):
    # At import, uvicorn restores the handler it found (ours) and re-raises. In its
    # lifespan, it captured the default disposition before setup() ran and restores
    # that before re-raising: the default is where ragas-trace flushes.
    pytest.importorskip("uvicorn")
    port = free_port()
    child = start(["-m", "uvicorn", f"{app}:app", "--app-dir", str(APP.parent),
                   "--port", str(port), "--log-level", "warning"],
                  child_env(receiver, judge_server, grace_s=20))
    serve(port, 8)
    child.send_signal(signal.SIGTERM)
    code, err = finish(child)
    assert code == -signal.SIGTERM, err
    assert statuses(receiver) == [("scored", None)] * 8, err


@pytest.mark.parametrize("worker", ["sync", "uvicorn"])
@pytest.mark.parametrize("preload", [False, True], ids=["setup-in-worker", "preload"])
def test_gunicorn_workers_flush_on_sigterm(receiver, judge_server, preload, worker):
    # The master sends SIGTERM to its forked workers. Sync workers handle it themselves
    # and end with sys.exit: the normal-exit path. UvicornWorker resets SIGTERM to the
    # default before uvicorn captures it, and uvicorn re-raises it after its shutdown:
    # with --preload (setup() ran in the master before the fork) that default is where
    # ragas-trace must flush. The judge hangs: every root is still held at SIGTERM.
    pytest.importorskip("gunicorn")
    if worker == "uvicorn":
        pytest.importorskip("uvicorn")
    judge_server.inject(Fault.HANG, times=None)
    port = free_port()
    kind = ["-k", "uvicorn.workers.UvicornWorker"] if worker == "uvicorn" else []
    target = "exit_app:app" if worker == "uvicorn" else "exit_app:wsgi_app"
    child = start(["-m", "gunicorn", target, "--chdir", str(APP.parent), *kind,
                   "--bind", f"127.0.0.1:{port}", "--workers", "2", "--log-level", "warning",
                   *(["--preload"] if preload else [])],
                  child_env(receiver, judge_server, grace_s=0.5))
    serve(port, 24)
    child.send_signal(signal.SIGTERM)
    code, err = finish(child)
    assert code == 0, err
    # A GET that timed out on the client side and was tried again is a request too.
    found = statuses(receiver)
    assert len(found) >= 24 and set(found) == {("dropped", "shutdown")}, (found, err)
