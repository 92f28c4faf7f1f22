"""Transparent wrappers around a streaming response's token generator.

They yield exactly what the user's generator yields, record the text as it passes,
and report once how the stream ended. While the inner generator runs they make the
request's root the current node (``CURRENT``): LlamaIndex starts the LLM lazily,
inside the user's ``next()``, as a span with no parent of its own, and this keeps
that span in the request's trace."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from typing import Any

from ragas_trace.collectors.llamaindex._nodes import CURRENT, Node
from ragas_trace.semconv import STREAM_ABANDONED, STREAM_COMPLETED, STREAM_ERROR

Finish = Callable[[list[str], str, BaseException | None], None]


def _delta(item: Any) -> str | None:
    """A token is a str (query streams) or a ``ChatResponse`` with a ``delta``."""
    if type(item) is str:
        return item
    delta = getattr(item, "delta", None)
    return delta if isinstance(delta, str) else None


def wrap_stream(inner: Iterator[Any], owner: Node, finish: Finish) -> Generator[Any, None, None]:
    parts: list[str] = []
    status = STREAM_ABANDONED
    error: BaseException | None = None
    try:
        while True:
            token = CURRENT.set(owner)
            try:
                item = next(inner)
            except StopIteration:
                status = STREAM_COMPLETED
                return
            finally:
                CURRENT.reset(token)
            text = _delta(item)
            if text is not None:
                parts.append(text)
            yield item
    except GeneratorExit:
        # The user closed our wrapper: close theirs, as closing it directly would.
        close = getattr(inner, "close", None)
        if close is not None:
            close()
        raise
    except BaseException as exc:
        status, error = STREAM_ERROR, exc
        raise
    finally:
        finish(parts, status, error)


async def wrap_async_stream(
    inner: AsyncIterator[Any], owner: Node, finish: Finish
) -> AsyncGenerator[Any, None]:
    parts: list[str] = []
    status = STREAM_ABANDONED
    error: BaseException | None = None
    try:
        while True:
            token = CURRENT.set(owner)
            try:
                item = await inner.__anext__()
            except StopAsyncIteration:
                status = STREAM_COMPLETED
                return
            finally:
                CURRENT.reset(token)
            text = _delta(item)
            if text is not None:
                parts.append(text)
            yield item
    except GeneratorExit:
        aclose = getattr(inner, "aclose", None)
        if aclose is not None:
            await aclose()
        raise
    except BaseException as exc:
        status, error = STREAM_ERROR, exc
        raise
    finally:
        finish(parts, status, error)
