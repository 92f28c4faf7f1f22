"""Retries of judge calls inside one time budget.

The ``openai`` client retries too, but its total time is unbounded (each wait up to
a minute, each attempt up to its own timeout). We run it with ``max_retries=0`` and
retry here: on 429, 408/409, 5xx, timeouts and connection errors, waiting what the
server's Retry-After asks (or exponential backoff with jitter), and giving up as
soon as the next attempt could not finish before the record's deadline.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import openai

from ragas_trace.judges.masking import mask
from ragas_trace.judges.reply_limit import ReplyCompressed, ReplyTooLarge
from ragas_trace.results import MetricStatus

logger = logging.getLogger(__name__)

T = TypeVar("T")
_RETRY_STATUS = frozenset({408, 409, 429})


class JudgeCallError(Exception):
    """A judge call failed for good; ``status`` is FAILED or TIMEOUT."""

    def __init__(self, status: MetricStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def retry_after_s(exc: BaseException) -> float | None:
    """The server's requested wait (``retry-after-ms`` or ``Retry-After``), if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(raw) if raw.strip() else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed is not None else None


def describe(exc: BaseException) -> tuple[MetricStatus, str, bool]:
    """(status if final, reason, retryable) for an exception from a judge call.

    Reasons are a small set of fixed phrases: they become span attributes, event
    explanations and metric labels, and an endpoint's error text may quote the
    request's credentials, so none of it is copied (``error_detail`` is for logs)."""
    if isinstance(exc, TimeoutError | openai.APITimeoutError):
        return MetricStatus.TIMEOUT, "judge timeout", True
    if isinstance(exc, ReplyTooLarge):
        return MetricStatus.FAILED, f"judge reply over {exc.limit} bytes", False
    if isinstance(exc, ReplyCompressed):
        return MetricStatus.FAILED, "judge reply compressed", False
    if isinstance(exc, openai.APIStatusError):
        retryable = exc.status_code in _RETRY_STATUS or exc.status_code >= 500
        return MetricStatus.FAILED, f"judge HTTP {exc.status_code}", retryable
    if isinstance(exc, openai.APIConnectionError):
        return MetricStatus.FAILED, "judge unreachable", True
    if isinstance(exc, ValueError):
        # An HTTP 200 whose body the client cannot decode (a proxy's error page, say).
        return MetricStatus.FAILED, "judge reply not valid JSON", True
    return MetricStatus.FAILED, f"judge reply unexpected ({type(exc).__name__})", False


def error_detail(exc: BaseException, secret: str | None) -> str:
    """What the endpoint said, masked, for the debug log."""
    message = exc.message if isinstance(exc, openai.APIError) else type(exc).__name__
    return mask(message if isinstance(message, str) else type(exc).__name__, secret)[:300]


async def call_with_retries(
    call: Callable[[float], Awaitable[T]],
    *,
    deadline: float,
    attempt_timeout_s: float,
    max_retries: int,
    base_delay_s: float = 0.5,
    max_delay_s: float = 30.0,
    secret: str | None = None,
) -> T:
    """``await call(timeout)`` until it succeeds, a non-retryable error occurs, the
    retries run out or the deadline (``time.monotonic()`` value) is near. Each
    attempt gets ``min(attempt_timeout_s, time left)`` and is cancelled after it.
    ``secret`` (the API key) is masked in what is logged."""
    attempt = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise JudgeCallError(MetricStatus.TIMEOUT, "the judge's time budget ran out")
        timeout = min(attempt_timeout_s, remaining)
        try:
            async with asyncio.timeout(timeout):
                return await call(timeout)
        except (TimeoutError, openai.OpenAIError, ValueError) as exc:
            error: BaseException = exc  # ``exc`` is unbound after the except block
            status, reason, retryable = describe(exc)
            logger.debug("judge call failed: %s: %s", reason, error_detail(exc, secret))
        if not retryable or attempt >= max_retries:
            if attempt:
                reason = f"{reason} (after {attempt + 1} attempts)"
            raise JudgeCallError(status, reason)
        asked = retry_after_s(error)
        delay = asked if asked is not None else \
            min(max_delay_s, base_delay_s * 2 ** attempt) * random.uniform(0.5, 1.0)
        if time.monotonic() + delay >= deadline:
            logger.debug("no time left to retry after %.1f s", delay)
            raise JudgeCallError(status, f"{reason}; no time left to retry")
        logger.debug("judge call failed (%s); retry %d in %.2f s", reason, attempt + 1, delay)
        await asyncio.sleep(delay)
        attempt += 1
