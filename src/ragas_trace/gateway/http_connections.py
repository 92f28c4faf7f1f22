"""Keeping slow HTTP clients from locking others out of the OTLP/HTTP receiver.

Two limits, each of which a trickling client could otherwise use up:

- *open connections* (``max_open``): when a new one arrives at the limit, the
  connection that has been idle or sending its request the longest is closed to
  make room. Only connections whose request is being handled are never closed,
  so a new client always gets in unless every slot is doing real work.
- *busy connections* (``max_busy``): those reading a request body or handling it,
  each holding up to ``max_request_bytes`` in memory. When a body is about to be
  read at the limit, the longest-running body reader is closed to make room.

A request must also arrive whole (headers and body) within one deadline
(``DeadlineReader``), whatever pace its bytes come at."""

from __future__ import annotations

import io
import math
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

State = Literal["reading", "body", "handling"]


@dataclass(eq=False)
class Connection:
    sock: Any
    state: State = "reading"
    since: float = field(default_factory=time.monotonic)
    closed: bool = False


class ConnectionBudget:
    """Thread-safe; ``open`` is called by the accept loop, the rest by each
    connection's own thread. ``on_close(reason)`` is told of every connection it
    closes to make room."""

    def __init__(self, max_open: int, max_busy: int, on_close: Any = None) -> None:
        if max_open < 1 or max_busy < 1:
            raise ValueError("max_open and max_busy must be >= 1")
        self._max_open = max_open
        self._max_busy = max_busy
        self._on_close = on_close
        self._lock = threading.Lock()
        self._open: set[Connection] = set()
        self._busy = 0

    def open(self, sock: Any) -> Connection | None:
        """A new connection, room made for it if needed; None when every open
        connection is handling a request."""
        with self._lock:
            if len(self._open) >= self._max_open and \
                    not self._close_oldest(("reading", "body"), "slow_connection_closed"):
                return None
            conn = Connection(sock)
            self._open.add(conn)
            return conn

    def next_request(self, conn: Connection) -> None:
        """``conn`` waits for its next request (after one was answered)."""
        with self._lock:
            self._leave_busy(conn)
            conn.state = "reading"
            conn.since = time.monotonic()

    def start_body(self, conn: Connection) -> bool:
        """Whether ``conn`` may read its body now (room made if needed)."""
        with self._lock:
            if conn.closed:
                return False
            if conn.state == "reading":
                if self._busy >= self._max_busy and \
                        not self._close_oldest(("body",), "slow_body_closed"):
                    return False
                self._busy += 1
            conn.state = "body"
            conn.since = time.monotonic()
            return True

    def handling(self, conn: Connection) -> None:
        with self._lock:
            if conn.state == "body":
                conn.state = "handling"

    def close(self, conn: Connection) -> None:
        """The connection's thread is done with it."""
        with self._lock:
            if not conn.closed:
                self._leave_busy(conn)
                self._open.discard(conn)
                conn.closed = True

    def open_count(self) -> int:
        with self._lock:
            return len(self._open)

    def _leave_busy(self, conn: Connection) -> None:
        if conn.state != "reading" and not conn.closed:
            self._busy -= 1

    def _close_oldest(self, states: tuple[State, ...], reason: str) -> bool:
        victims = [c for c in self._open if c.state in states]
        if not victims:
            return False
        victim = min(victims, key=lambda c: c.since)
        self._leave_busy(victim)
        self._open.discard(victim)
        victim.closed = True
        try:
            # Unblocks the victim's thread, which is waiting on its socket; the plain
            # socket call, since an SSL socket's own shutdown is not thread-safe.
            socket.socket.shutdown(victim.sock, socket.SHUT_RDWR)
        except OSError:
            pass
        if self._on_close is not None:
            self._on_close(reason)
        return True


class DeadlineReader(io.RawIOBase):
    """A socket read through one deadline: each receive may wait only for what is
    left of it, so a request trickled a byte at a time still times out. The deadline
    counts from the request's first byte; before it, an idle keep-alive connection
    waits as long again. Counted from the wait's start, a client's request sent just
    before an idle connection's deadline ran out mid-body: the exporter of an app
    sending a batch every few seconds got 400s it does not retry."""

    def __init__(self, sock: Any) -> None:
        super().__init__()
        self._sock = sock
        self._deadline = math.inf
        self._timeout_s = math.inf
        self.timed_out = False
        self.received = 0  # bytes since ``start``: 0 on an idle keep-alive connection

    def start(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._deadline = time.monotonic() + timeout_s
        self.timed_out = False
        self.received = 0

    def remaining(self) -> float:
        return self._deadline - time.monotonic()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self.remaining()
        if remaining <= 0:
            self.timed_out = True
            raise TimeoutError("the request did not arrive within its deadline")
        self._sock.settimeout(remaining)
        try:
            received: int = self._sock.recv_into(buffer)
        except TimeoutError:
            self.timed_out = True
            raise
        if self.received == 0 and received > 0:
            self._deadline = time.monotonic() + self._timeout_s  # the request begins
        self.received += received
        return received
