"""Transparent wrappers around a streaming response's token generator.

They yield exactly what the user's generator yields, record the text as it passes,
and report once how the stream ended. While the inner generator runs they mark the
request in a context variable: LlamaIndex starts the LLM lazily, inside the user's
``next()``, as a span with no parent, and the collector uses the mark to keep that
span in the request's trace."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from contextvars import ContextVar
from typing import Any

from llama_index.core.instrumentation.span import active_span_id

STREAM_COMPLETED = "completed"
STREAM_ABANDONED = "abandoned"
STREAM_ERROR = "error"
STREAM_TIMEOUT = "timeout"

# (request marker, LlamaIndex span id active in the consumer when it called next()).
# A span starting under exactly that parent id was started by the stream itself.
STREAM_PARENT: ContextVar[tuple[object, str | None] | None] = ContextVar(
    "ragas_trace_llamaindex_stream", default=None
)

Finish = Callable[[list[str], str, BaseException | None], None]


def _delta(item: Any) -> str | None:
    """A token is a str (query streams) or a ``ChatResponse`` with a ``delta``."""
    if type(item) is str:
        return item
    delta = getattr(item, "delta", None)
    return delta if isinstance(delta, str) else None


def wrap_stream(inner: Iterator[Any], owner: object, finish: Finish) -> Generator[Any, None, None]:
    parts: list[str] = []
    status = STREAM_ABANDONED
    error: BaseException | None = None
    try:
        while True:
            token = STREAM_PARENT.set((owner, active_span_id.get()))
            try:
                item = next(inner)
            except StopIteration:
                status = STREAM_COMPLETED
                return
            finally:
                STREAM_PARENT.reset(token)
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
    inner: AsyncIterator[Any], owner: object, finish: Finish
) -> AsyncGenerator[Any, None]:
    parts: list[str] = []
    status = STREAM_ABANDONED
    error: BaseException | None = None
    try:
        while True:
            token = STREAM_PARENT.set((owner, active_span_id.get()))
            try:
                item = await inner.__anext__()
            except StopAsyncIteration:
                status = STREAM_COMPLETED
                return
            finally:
                STREAM_PARENT.reset(token)
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
