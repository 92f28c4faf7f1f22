"""One JSON request with the standard library (no HTTP client dependency for a few
requests a second), its failures sorted into retry or not."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from ragas_trace.exporters.annotations.queue import SendError

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# Enough for Phoenix's list of missing span ids in a 100-annotation batch; bounded
# because it is read into memory.
_MAX_ERROR_CHARS = 4096
_MAX_REPLY_BYTES = 4 * 1024 * 1024


def request_json(method: str, url: str, body: Any, headers: Mapping[str, str],
                 timeout_s: float, retry_statuses: frozenset[int] = RETRY_STATUSES
                 ) -> tuple[int, Any]:
    """Send ``body`` (``None``: no body) as JSON; the status and decoded reply, or
    ``SendError`` (``retry`` for a network error or a status in ``retry_statuses``;
    ``status`` and ``detail`` of an HTTP error)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method,
        headers={"Content-Type": "application/json", "Accept": "application/json",
                 **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status = int(response.status)
            raw = response.read(_MAX_REPLY_BYTES)
    except urllib.error.HTTPError as exc:
        detail = exc.read(_MAX_ERROR_CHARS).decode("utf-8", "replace")
        raise SendError(f"HTTP {exc.code} from {url}: {detail[:200]}",
                        retry=exc.code in retry_statuses, status=exc.code,
                        detail=detail) from None
    except (OSError, ValueError) as exc:  # refused, reset, timeout, bad URL
        raise SendError(f"{url}: {exc}", retry=not isinstance(exc, ValueError)) from None
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


def post_json(url: str, body: Any, headers: Mapping[str, str], timeout_s: float,
              retry_statuses: frozenset[int] = RETRY_STATUSES) -> Any:
    """POST ``body`` as JSON; the decoded reply, or ``SendError``."""
    return request_json("POST", url, body, headers, timeout_s, retry_statuses)[1]
