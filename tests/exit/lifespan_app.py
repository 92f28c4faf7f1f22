"""An ASGI app that calls ``setup()`` in its lifespan startup, after uvicorn has
installed its own signal handlers (it found the default disposition for SIGTERM,
and restores that before re-raising the signal).

    python -m uvicorn lifespan_app:app --app-dir DIR   # one RAG request per HTTP GET
"""

from __future__ import annotations

from typing import Any

import ragas_trace
from ragas_trace.testing.rag_spans import rag_request

tracers: list[Any] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                rt = ragas_trace.setup(service_name="exit-test", judge="openai",
                                       exporter="otlp")
                tracers.append(rt.tracer_provider.get_tracer("exit-test"))
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    rag_request(tracers[0])
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})
