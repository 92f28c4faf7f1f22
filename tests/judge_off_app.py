"""The app worker of the recommended pre-fork set-up: ``setup(judge="off")`` at import,
spans exported over OTLP (``OTEL_EXPORTER_OTLP_ENDPOINT``) to a scoring sidecar. Each
request records one RAG request and answers what this worker has loaded: JSON with
its pid, the judge modules imported, its threads and its span processors.

    python -m gunicorn judge_off_app:app --chdir tests -k uvicorn.workers.UvicornWorker -w 4
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

import ragas_trace
from ragas_trace.testing.asgi import answer_lifespan
from ragas_trace.testing.rag_spans import rag_request

rt = ragas_trace.setup(service_name="judge-off")
tracer = rt.tracer_provider.get_tracer("judge-off")


def report() -> bytes:
    rag_request(tracer)
    processors = rt.tracer_provider._active_span_processor._span_processors
    return json.dumps({
        "pid": os.getpid(),
        "judge_modules": sorted(m for m in sys.modules
                                if m.startswith(("ragas_trace.judges.local",
                                                 "onnxruntime", "tokenizers"))),
        "threads": sorted(t.name for t in threading.enumerate()),
        "processors": [type(p).__name__ for p in processors],
    }).encode()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await answer_lifespan(receive, send)
        return
    body = report()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
