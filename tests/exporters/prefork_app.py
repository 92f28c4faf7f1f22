"""The RAG app the pre-fork tests serve: ``setup()`` at import (so in the master with
``--preload``, in each worker without), ``metrics_port`` from the environment, and
the scripted judge: these tests are about where the counts go, and the OpenAI
client's import alone costs each worker about a second of CPU. Each request records
one RAG request's spans and answers
``<pid> <serves the metrics port: 0/1>``.

    python -m gunicorn prefork_app:wsgi_app --chdir DIR [-k uvicorn.workers.UvicornWorker]
    python -m uvicorn prefork_app:app --app-dir DIR --workers 4
"""

from __future__ import annotations

import os
from typing import Any

import ragas_trace
from ragas_trace.testing.asgi import answer_lifespan
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge

rt = ragas_trace.setup(service_name="prefork", judge=ScriptedJudge(0.8), exporter="none")
tracer = rt.tracer_provider.get_tracer("prefork")


def one_request() -> bytes:
    rag_request(tracer)
    return f"{os.getpid()} {int(rt.metrics_port is not None)}".encode()


def wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    body = one_request()
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [body]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await answer_lifespan(receive, send)
        return
    body = one_request()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})
