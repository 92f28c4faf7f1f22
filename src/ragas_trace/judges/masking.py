"""Masking of credentials in text that came from the judge or its errors, before it is
logged or put on a span: endpoints echo the request (an ``Authorization`` header
quoted in a 401, 429 or 500 body) and OpenAI's own 401 text quotes the key, masked
but recognisable."""

from __future__ import annotations

import re

MASK = "[masked]"
# Keys shorter than this are not masked by value: "test" or "x" would blank out words.
_MIN_KEY_CHARS = 8
_CREDENTIALS = re.compile(
    r"(?i:\bbearer\s+)\S+"  # Authorization: Bearer <token>
    r"|(?i:\bbasic\s+)[A-Za-z0-9+/=]{8,}"  # Authorization: Basic <base64>
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_*.\-]{6,}"  # OpenAI sk-..., sk-proj-..., Langfuse pk-lf-/sk-lf-
    r"|[A-Za-z0-9_\-]*\*{4,}[A-Za-z0-9_\-]*"  # a key already masked by the endpoint: abc****wxyz
    # a long base64/hex run after a word that names a secret (api_key=..., "token": "...")
    r"|(?P<name>(?i:key|token|secret|password|credential)[\"']?\s*[:=]\s*[\"']?)"
    r"[A-Za-z0-9+/_=.\-]{16,}"
)


def mask(text: str, secret: str | None = None) -> str:
    """``text`` with ``secret`` (the configured key) and anything shaped like a
    credential replaced by ``[masked]``."""
    if secret and len(secret) >= _MIN_KEY_CHARS:
        text = text.replace(secret, MASK)
    return _CREDENTIALS.sub(lambda m: (m.group("name") or "") + MASK, text)
