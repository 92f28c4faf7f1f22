"""The ASGI lifespan protocol, answered as a bare test app must for uvicorn to start
and stop it (no startup or shutdown work of its own)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def answer_lifespan(receive: Receive, send: Send) -> None:
    """Complete startup and shutdown; returns when the server shuts the app down."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
