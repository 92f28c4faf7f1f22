"""OTLP/HTTP trace receiver (``POST /v1/traces``, protobuf or JSON, gzip or not) and
the health endpoint (``GET /health``, no auth: it shows counters only).

Standard library server, HTTP/1.1 keep-alive, one thread per connection. Slow
clients are kept in check by ``http_connections``: one deadline for a whole request
(headers and body), a cap on open connections that closes the slowest to admit a
new one, and a cap on bodies read or handled at once (memory). Every refusal is an
OTLP error answer (a ``google.rpc.Status`` in the request's encoding) with the
status code the spec asks for; a body over the limit is answered 413 and then read
and discarded (within the deadline) before the connection closes, so the client
gets the answer instead of a reset."""

from __future__ import annotations

import io
import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.gateway.decode import (
    BadRequest,
    Encoding,
    decompress,
    encode,
    encoding_of,
    status_body,
)
from ragas_trace.gateway.http_connections import Connection, ConnectionBudget, DeadlineReader
from ragas_trace.gateway.ingest import Busy, TooLarge
from ragas_trace.gateway.security import Security
from ragas_trace.gateway.stats import GatewayStats

logger = logging.getLogger(__name__)

Handle = Callable[[bytes, Encoding], ExportTraceServiceResponse]

# google.rpc.Code values for the Status body of each HTTP error.
_RPC_CODE = {400: 3, 401: 16, 404: 5, 411: 3, 413: 8, 415: 3, 500: 13, 503: 14}
_BUSY_LIMIT_BODY = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n" \
                   b"Content-Length: 0\r\nConnection: close\r\n\r\n"
_DRAIN_CHUNK = 64 * 1024


class OtlpHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the stdlib's 5 refuses bursts of senders
    block_on_close = False

    def __init__(self, address: tuple[str, int], handle: Handle, *, stats: GatewayStats,
                 security: Security, max_request_bytes: int, max_connections: int = 64,
                 max_open_connections: int = 1024, request_timeout_s: float = 10.0,
                 health: Callable[[], dict[str, Any]]) -> None:
        self.handle = handle
        self.stats = stats
        self.security = security
        self.max_request_bytes = max_request_bytes
        self.request_timeout_s = request_timeout_s
        self.health = health
        self.connections = ConnectionBudget(max_open_connections, max_connections,
                                            on_close=stats.refused)
        self._current = threading.local()  # the Connection its thread serves
        super().__init__(address, _Handler)
        context = security.ssl_context()
        if context is not None:
            # Handshake in the connection's thread, not the accept loop.
            self.socket = context.wrap_socket(self.socket, server_side=True,
                                              do_handshake_on_connect=False)

    @property
    def endpoint(self) -> str:
        host, port = self.server_address[:2]
        return f"{'https' if self.security.tls else 'http'}://{host!s}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        conn = self.connections.open(request)
        if conn is None:
            self.stats.refused("too_many_connections")
            try:
                request.sendall(_BUSY_LIMIT_BODY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        threading.Thread(target=self._serve, args=(request, client_address, conn),
                         name="ragas-gateway-http-conn", daemon=True).start()

    def _serve(self, request: Any, client_address: Any, conn: Connection) -> None:
        self._current.conn = conn
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.connections.close(conn)
            self.shutdown_request(request)

    def current_connection(self) -> Connection:
        conn: Connection = self._current.conn
        return conn

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Failed TLS handshakes, resets, timeouts: the client's problem, not ours.
        logger.debug("connection from %s failed", client_address, exc_info=True)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="ragas-gateway-http",
                                  daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: OtlpHttpServer
    protocol_version = "HTTP/1.1"
    server_version = "ragas-trace-gateway"
    sys_version = ""

    def setup(self) -> None:
        self.conn = self.server.current_connection()
        self.request.settimeout(self.server.request_timeout_s)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.do_handshake()
        super().setup()
        self.rfile.close()  # the stdlib's reader, replaced by one with a deadline
        self._reader = DeadlineReader(self.request)
        self.rfile = io.BufferedReader(self._reader)
        self._unread = 0  # body bytes left unread by a refusal, drained before closing
        self._body_read = False

    def handle_one_request(self) -> None:
        self.server.connections.next_request(self.conn)
        self._reader.start(self.server.request_timeout_s)
        self._body_read = False
        super().handle_one_request()  # a timeout closes the connection
        if self._reader.timed_out:
            self.close_connection = True
            # An idle keep-alive connection timing out is no refused request.
            if self._reader.received:
                self.server.stats.refused("request_timeout")

    def handle_expect_100(self) -> bool:
        # A client that waits for "100 Continue" is told "413" before sending the body.
        if self._declared_length() > self.server.max_request_bytes:
            self.close_connection = True
            self.server.stats.refused("http_413")
            self._error(413, self._too_large_message(), "protobuf")
            return False
        return super().handle_expect_100()

    def finish(self) -> None:
        if self._unread:
            try:
                self.wfile.flush()
            except OSError:
                pass
            self._drain()
        super().finish()

    def _drain(self) -> None:
        """Read and discard the refused body (within the request's deadline), with our
        side closed for writing: closing with unread data would reset the connection
        and the client would lose the answer."""
        try:
            socket.socket.shutdown(self.request, socket.SHUT_WR)
            while self._unread > 0:
                chunk = self.rfile.read1(min(self._unread, _DRAIN_CHUNK))
                if not chunk:
                    return
                self._unread -= len(chunk)
        except (OSError, ValueError):
            return

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] in ("/health", "/healthz"):
            body = json.dumps(self.server.health()).encode()
            self._send(200, body, "application/json")
        else:
            self._error(404, "not found: the health endpoint is GET /health", "json")

    def do_POST(self) -> None:
        encoding: Encoding = "protobuf"
        try:
            if self.path.split("?", 1)[0] != "/v1/traces":
                raise BadRequest(404, f"not found: {self.path[:100]!r}; traces go to "
                                      "POST /v1/traces")
            if not self.server.security.authorized(self.headers.get("Authorization")):
                raise BadRequest(401, "missing or wrong bearer token")
            encoding = encoding_of(self.headers.get("Content-Type"))
            body = self._read_body()
            self.server.connections.handling(self.conn)
            body = decompress(body, self.headers.get("Content-Encoding"),
                              self.server.max_request_bytes)
            response = self.server.handle(body, encoding)
        except BadRequest as exc:
            if not self._body_read:
                # Answer, then drain what the client still sends, then close.
                self.close_connection = True
                self._unread = self._declared_length()
            self.server.stats.refused(f"http_{exc.status}")
            self._error(exc.status, exc.message, encoding)
            return
        except Busy as exc:
            self._error(503, str(exc), encoding, retry_after=exc.retry_after_s)
            return
        except TooLarge as exc:
            self._error(413, str(exc), encoding)
            return
        except Exception as exc:
            self.server.stats.refused("internal_error")
            self._error(500, "internal error", encoding)
            record_internal_error("gateway.http_receiver", exc)
            return
        self._send(200, encode(response, encoding), _media(encoding))

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise BadRequest(411, "chunked bodies are not accepted: send Content-Length")
        raw = self.headers.get("Content-Length")
        if raw is None or not raw.strip().isdigit():
            self.close_connection = True
            raise BadRequest(411, "Content-Length required")
        length = int(raw)
        if length > self.server.max_request_bytes:
            # The body is drained after the answer, and this connection not reused.
            self.close_connection = True
            raise BadRequest(413, self._too_large_message())
        if not self.server.connections.start_body(self.conn):
            raise BadRequest(503, "gateway busy: too many requests in progress, retry")
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise BadRequest(400, "timed out reading the request body") from None
        self._body_read = True
        if len(body) != length:
            self.close_connection = True
            raise BadRequest(400, "request body shorter than Content-Length")
        return body

    def _declared_length(self) -> int:
        raw = self.headers.get("Content-Length", "")
        return int(raw) if raw.strip().isdigit() else 0

    def _too_large_message(self) -> str:
        return (f"request of {self._declared_length()} bytes exceeds the limit of "
                f"{self.server.max_request_bytes}")

    def _error(self, status: int, message: str, encoding: Encoding,
               retry_after: int | None = None) -> None:
        if status >= 500:
            logger.warning("OTLP/HTTP request refused: %d %s", status, message)
        else:
            logger.info("OTLP/HTTP request refused: %d %s", status, message)
        body = status_body(_RPC_CODE.get(status, 2), message, encoding)
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        if status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        self._send(status, body, _media(encoding), headers)

    def _send(self, status: int, body: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        # Writing gets the whole deadline again: the read deadline may be spent.
        self.request.settimeout(self.server.request_timeout_s)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("http %s " + format, self.client_address[0], *args)


def _media(encoding: Encoding) -> str:
    return "application/json" if encoding == "json" else "application/x-protobuf"
