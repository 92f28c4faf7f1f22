"""The app the exit and SIGTERM tests run in a child process: ``setup()`` at import
(OTLP to the parent's receiver, the OpenAI judge at the parent's fake server, both
from the environment), then RAG requests whose roots are held for scoring.

    python exit_app.py exit N      # N requests, then a normal interpreter exit
    python exit_app.py sigterm N   # N requests, then wait for SIGTERM (or SIGINT)
    python exit_app.py raise N     # N requests, then an uncaught exception
    python exit_app.py process N   # N requests in a forked multiprocessing.Process
    python exit_app.py pool N      # N requests in forked Pool workers, close() + join()
    python exit_app.py pool-with N # the same in `with Pool(...)`, which terminates them
    python exit_app.py own N       # the same, with the app's own SIGTERM handler
                                   # (installed before setup(): exits with status 3)
    python -m uvicorn exit_app:app --app-dir DIR   # one request per HTTP GET
    python -m gunicorn exit_app:wsgi_app --chdir DIR # the same under gunicorn (WSGI)
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from types import FrameType
from typing import Any

import ragas_trace
from ragas_trace.testing.asgi import answer_lifespan
from ragas_trace.testing.rag_spans import rag_request


def own_handler(signum: int, frame: FrameType | None) -> None:
    sys.exit(3)


# Ctrl-C as in a terminal. A shell's background job (a CI script run with `&`) starts
# with SIGINT ignored, which Python leaves ignored; a runner may also start us with it
# blocked (the mask survives exec, and every thread inherits it): either way the Ctrl-C
# test would wait for nothing.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
if sys.argv[1:2] == ["own"]:
    signal.signal(signal.SIGTERM, own_handler)
rt = ragas_trace.setup(service_name="exit-test", judge="openai", exporter="otlp")
tracer = rt.tracer_provider.get_tracer("exit-test")


def one_request(_: int) -> None:
    rag_request(tracer)


def in_children(mode: str, count: int) -> None:
    """RAG requests made only in forked children, whose exit skips ``atexit``."""
    fork = multiprocessing.get_context("fork")
    if mode == "process":
        child = fork.Process(target=lambda: [one_request(i) for i in range(count)])
        child.start()
        child.join(60)
    elif mode == "pool":
        pool = fork.Pool(2)
        pool.map(one_request, range(count))
        pool.close()
        pool.join()
    else:
        with fork.Pool(2) as pool:
            pool.map(one_request, range(count))


def wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    rag_request(tracer)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await answer_lifespan(receive, send)
        return
    rag_request(tracer)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


if __name__ == "__main__":
    mode, count = sys.argv[1], int(sys.argv[2])
    if mode in ("process", "pool", "pool-with"):
        in_children(mode, count)
        sys.exit(0)
    for _ in range(count):
        rag_request(tracer)
    print("ready", flush=True)
    if mode == "raise":
        raise RuntimeError("the app failed")
    if mode == "own":
        assert signal.getsignal(signal.SIGTERM) is own_handler  # left alone by setup()
    if mode in ("sigterm", "own"):
        time.sleep(120)
