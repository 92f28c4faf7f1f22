"""One JSON POST with the standard library (no HTTP client dependency for a few
requests a second), its failures sorted into retry or not."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from ragas_trace.exporters.annotations.queue import SendError

_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_MAX_ERROR_CHARS = 200


def post_json(url: str, body: Any, headers: Mapping[str, str], timeout_s: float,
              retry_statuses: frozenset[int] = _RETRY_STATUSES) -> Any:
    """POST ``body`` as JSON; the decoded reply, or ``SendError`` (``retry`` for a
    network error or a status in ``retry_statuses``)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json",
                 **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read(_MAX_ERROR_CHARS).decode("utf-8", "replace")
        raise SendError(f"HTTP {exc.code} from {url}: {detail}",
                        retry=exc.code in retry_statuses) from None
    except (OSError, ValueError) as exc:  # refused, reset, timeout, bad URL
        raise SendError(f"{url}: {exc}", retry=not isinstance(exc, ValueError)) from None
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None
