"""Export failures told once, in words a person can act on. While a command runs,
the OpenTelemetry exporters' and urllib3's warnings (one per retry and batch) and the
library's own span-loss warnings are folded (counted, not printed); at the end the
command says in one line what did not arrive where, and, when nothing accepts
connections there, what to start."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from ragas_trace.exporters.export_queue import LOST_FOUND_MESSAGE, LOST_MESSAGE

_FOLDED_LOGGERS = ("opentelemetry.exporter", "urllib3")
_LOSS_TEMPLATES = (LOST_MESSAGE, LOST_FOUND_MESSAGE)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_GRPC_PORT = 4317  # an OTLP/gRPC endpoint given without a port
PROBE_TIMEOUT_S = 2.0
_SEEN = "ragas_trace_folded"


class FoldedWarnings(logging.Filter):
    """Drops (and counts) the exporter noise; everything else passes."""

    def __init__(self, fold_losses: bool) -> None:
        super().__init__()
        self._fold_losses = fold_losses
        self._lock = threading.Lock()
        self.count = 0

    def filter(self, record: logging.LogRecord) -> bool:
        noise = (record.name.startswith(_FOLDED_LOGGERS)
                 or (self._fold_losses and record.msg in _LOSS_TEMPLATES))
        # Each root handler asks about the same record: count it once.
        if noise and not getattr(record, _SEEN, False):
            setattr(record, _SEEN, True)
            with self._lock:
                self.count += 1
        return not noise


@contextmanager
def folded_warnings(fold_losses: bool = True, enabled: bool = True
                    ) -> Iterator[FoldedWarnings]:
    """``FoldedWarnings`` on the root logger's handlers (where every record that
    propagates is written) for the duration of the block; none when not ``enabled``
    (its count stays 0)."""
    folding = FoldedWarnings(fold_losses)
    handlers = list(logging.getLogger().handlers) if enabled else []
    for handler in handlers:
        handler.addFilter(folding)
    try:
        yield folding
    finally:
        for handler in handlers:
            handler.removeFilter(folding)


def probe(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why nothing could be sent to ``url`` at the TCP level ("nothing is listening
    at URL"...), or None when it accepts a connection (or is not a URL we can read)."""
    parts = urlsplit(url if "://" in url else f"//{url}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        return None
    if not host:
        return None
    port = port or _DEFAULT_PORTS.get(parts.scheme, _GRPC_PORT)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return f"nothing is listening at {url}"
    except TimeoutError:
        return f"nothing answered at {url} within {timeout_s:.0f} s"
    except socket.gaierror:
        return f"the host of {url} cannot be resolved"
    except OSError as exc:
        return f"{url} cannot be reached ({exc.strerror or exc})"


def same_address(a: str, b: str) -> bool:
    """Whether two endpoint URLs name one host and port (traces and metrics of one
    collector)."""
    def address(url: str) -> tuple[str | None, int | None]:
        parts = urlsplit(url if "://" in url else f"//{url}")
        try:
            return parts.hostname, parts.port
        except ValueError:
            return parts.hostname, None
    return address(a) == address(b)
