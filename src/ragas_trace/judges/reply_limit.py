"""Judge replies bounded in bytes. The ``openai`` client reads a whole reply into
memory, and its timeouts bound time, not bytes: an endpoint streaming an endless body
would grow the app's memory until the attempt times out. The judge's HTTP client
stops reading at ``max_reply_bytes`` and the call fails with a fixed reason.

The limit counts bytes as they arrive, so the client asks for uncompressed replies
and refuses compressed ones (a gzip bomb would pass a count of wire bytes)."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Any

import openai


def _http_package() -> Any:
    """The HTTP package the ``openai`` client is built on: ``httpx2`` in openai 3,
    ``httpx`` before (``openai>=1.40`` is allowed). The stream wrapper must subclass
    that package's ``AsyncByteStream``."""
    for cls in openai.DefaultAsyncHttpxClient.__mro__:
        if cls.__name__ == "AsyncClient":
            return importlib.import_module(cls.__module__.partition(".")[0])
    return importlib.import_module("httpx")


_http = _http_package()
_StreamBase: Any = _http.AsyncByteStream


class ReplyTooLarge(openai.OpenAIError):
    """Raised while reading a reply past the limit. An ``OpenAIError``, so the
    ``openai`` client passes it on unwrapped."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"judge reply over {limit} bytes")
        self.limit = limit


class ReplyCompressed(openai.OpenAIError):
    def __init__(self) -> None:
        super().__init__("judge reply compressed")


class _Bounded(_StreamBase):  # type: ignore[misc]
    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ReplyTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def bounded_client(max_bytes: int) -> Any:
    """An HTTP client for ``openai.AsyncOpenAI(http_client=...)`` with the openai
    client's own defaults, whose replies stop at ``max_bytes``."""

    async def bound(response: Any) -> None:
        # Runs before the body is read: httpx closes the response if this raises.
        length = response.headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > max_bytes:
            raise ReplyTooLarge(max_bytes)
        encodings = response.headers.get_list("content-encoding", split_commas=True)
        if any(e.strip().lower() not in ("", "identity") for e in encodings):
            raise ReplyCompressed()
        if isinstance(response.stream, _StreamBase):
            response.stream = _Bounded(response.stream, max_bytes)

    return openai.DefaultAsyncHttpxClient(event_hooks={"response": [bound]},
                                          headers={"Accept-Encoding": "identity"})
