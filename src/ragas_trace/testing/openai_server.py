"""``FakeOpenAIServer``: a real HTTP server on 127.0.0.1 that speaks the OpenAI
``/v1/chat/completions`` and ``/v1/embeddings`` API, for tests and benchmarks that
drive the real ``openai`` client.

It answers our judge's prompts sensibly by default (see ``fake_judge``), can be told
to answer a task differently, adds a configurable latency, injects faults (HTTP 500,
429 with Retry-After, a hang, invalid JSON, output truncated with
``finish_reason=length``, a dropped connection, a 400 for JSON-schema output or for
a named request parameter, an HTTP 200 whose body is not JSON, degenerate embeddings,
an endless body, error bodies that quote the request's headers, bad ``usage``) and
counts requests, tokens and streamed bytes. A stopped server gives "connection refused".

    with FakeOpenAIServer(latency_s=0.01) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="test")
        server.inject(Fault.RATE_LIMIT, times=1, retry_after_s=0.1)
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler
from typing import Any

from ragas_trace.judges.prompts import Task
from ragas_trace.testing import fake_judge
from ragas_trace.testing._http import LoopbackHTTPServer
from ragas_trace.testing.fake_judge import TaskInput
from ragas_trace.testing.tokens import count_message_tokens, count_tokens

CHAT_PATH = "/v1/chat/completions"
EMBEDDINGS_PATH = "/v1/embeddings"

TaskReply = Callable[[TaskInput], Any]
"""Returns the reply content: a JSON-able object (dumped) or a raw string."""
ChatHandler = Callable[[Mapping[str, Any]], str | None]
"""Returns the reply content for a request body, or None to fall through."""


class Fault(StrEnum):
    SERVER_ERROR = "500"
    RATE_LIMIT = "429"
    HANG = "hang"  # no reply until the client gives up or the server stops
    INVALID_JSON = "invalid_json"
    TRUNCATED = "truncated"  # half the reply, finish_reason=length
    DISCONNECT = "disconnect"  # close the connection without a reply
    SCHEMA_UNSUPPORTED = "schema_unsupported"  # 400 when response_format is json_schema
    UNSUPPORTED_PARAMETER = "unsupported_parameter"  # 400 when the body has ``parameter``
    GARBAGE = "garbage"  # HTTP 200 whose body is not JSON (nor UTF-8)
    ZERO_EMBEDDINGS = "zero_embeddings"  # every vector all zeros
    NAN_EMBEDDINGS = "nan_embeddings"  # every vector NaN
    SHORT_EMBEDDINGS = "short_embeddings"  # vectors of another dimension than usual
    HUGE_EMBEDDINGS = "huge_embeddings"  # finite values whose squares overflow (1e300)
    ENDLESS_BODY = "endless_body"  # HTTP 200, chunked, streaming until the client leaves
    HUGE_LENGTH = "huge_length"  # HTTP 200 announcing a 1 TB Content-Length, then streaming
    ECHO_HEADERS = "echo_headers"  # an error (``status``) whose body quotes the request headers
    UNAUTHORIZED = "unauthorized"  # OpenAI's 401 text, quoting the key masked as OpenAI does
    GZIPPED = "gzipped"  # a normal reply, gzip-compressed whatever the client accepts
    BAD_USAGE = "bad_usage"  # ``usage`` token counts replaced by ``usage`` (NaN, -1, "12")


@dataclass
class _Rule:
    fault: Fault
    remaining: int | None
    task: Task | None
    path: str | None
    retry_after_s: float
    parameter: str | None = None
    status: int = 500
    usage: Any = None


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    body: dict[str, Any]
    task: Task | None
    fault: Fault | None
    prompt_tokens: int
    completion_tokens: int
    started: float
    ended: float


@dataclass
class ServerStats:
    requests: int = 0
    chat_requests: int = 0
    embedding_requests: int = 0
    by_task: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_inputs: int = 0
    streamed_bytes: int = 0  # body bytes written by ENDLESS_BODY / HUGE_LENGTH


class FakeOpenAIServer:
    """Loopback OpenAI-compatible server. Thread-safe; use as a context manager or
    call ``start()`` / ``stop()``. ``stop()`` is safe to call twice."""

    def __init__(self, *, latency_s: float = 0.0, model: str = "fake-judge",
                 embedding_dim: int = fake_judge.EMBEDDING_DIM, port: int = 0,
                 chat_handler: ChatHandler | None = None, record_limit: int = 10_000) -> None:
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s!r}")
        self.latency_s = latency_s
        self.model = model
        self.embedding_dim = embedding_dim
        self.chat_handler = chat_handler
        self._port = port
        self._lock = threading.Lock()
        self._rules: list[_Rule] = []
        self._replies: dict[Task, TaskReply] = {}
        self._stats = ServerStats()
        self._recorded: deque[RecordedRequest] = deque(maxlen=record_limit)
        self._stopping = threading.Event()
        self._httpd: LoopbackHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None

    # lifecycle
    def start(self) -> FakeOpenAIServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = LoopbackHTTPServer(("127.0.0.1", self._port), _make_handler(self))
        self._httpd = httpd
        self._address = (str(httpd.server_address[0]), int(httpd.server_address[1]))
        self._port = self._address[1]  # a restart keeps the same URL
        # A short poll interval keeps stop() quick.
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,),
                                        name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; hanging requests are released. Later requests are refused."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._address is None:
            raise RuntimeError("the server has not been started")
        return f"http://{self._address[0]}:{self._address[1]}/v1"

    # behaviour
    def inject(self, fault: Fault | str, *, times: int | None = 1, task: Task | str | None = None,
               path: str | None = None, retry_after_s: float = 1.0,
               parameter: str | None = None, status: int = 500, usage: Any = None) -> None:
        """Make the next ``times`` matching requests fail (``None`` = every one).

        ``task`` limits the fault to one judge task, ``path`` to one endpoint;
        ``parameter`` names the request field that ``UNSUPPORTED_PARAMETER`` refuses,
        as newer OpenAI models refuse ``max_tokens`` or ``temperature``; ``status``
        is the HTTP status of ``ECHO_HEADERS``; ``usage`` the value ``BAD_USAGE`` puts
        in every token count of the reply's ``usage``.
        """
        fault = Fault(fault)
        if (fault is Fault.UNSUPPORTED_PARAMETER) != (parameter is not None):
            raise ValueError("parameter: give it with UNSUPPORTED_PARAMETER, and only then")
        rule = _Rule(fault, times, Task(task) if task is not None else None, path,
                     retry_after_s, parameter, status, usage)
        with self._lock:
            self._rules.append(rule)

    def clear_faults(self) -> None:
        with self._lock:
            self._rules.clear()

    def set_reply(self, task: Task | str, reply: TaskReply | None) -> None:
        """Answer ``task`` with ``reply(request)`` instead of the default (None resets)."""
        with self._lock:
            if reply is None:
                self._replies.pop(Task(task), None)
            else:
                self._replies[Task(task)] = reply

    # counters
    def stats(self) -> ServerStats:
        with self._lock:
            s = self._stats
            return ServerStats(s.requests, s.chat_requests, s.embedding_requests,
                               Counter(s.by_task), Counter(s.faults), s.prompt_tokens,
                               s.completion_tokens, s.embedding_inputs, s.streamed_bytes)

    def _count_streamed(self, n: int) -> None:
        with self._lock:
            self._stats.streamed_bytes += n

    def recorded(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._recorded)

    def reset_counters(self) -> None:
        with self._lock:
            self._stats = ServerStats()
            self._recorded.clear()

    # request handling (server threads)
    def _take_fault(self, path: str, task: Task | None, body: Mapping[str, Any]) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.path is not None and rule.path != path:
                    continue
                if rule.task is not None and rule.task != task:
                    continue
                if rule.fault is Fault.SCHEMA_UNSUPPORTED and not _wants_schema(body):
                    continue
                if rule.parameter is not None and rule.parameter not in body:
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._rules.remove(rule)
                self._stats.faults[rule.fault] += 1
                return rule
        return None

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _chat_content(self, body: Mapping[str, Any], request: TaskInput | None) -> str:
        if request is None:
            custom = self.chat_handler(body) if self.chat_handler is not None else None
            return custom if custom is not None else "{}"
        with self._lock:
            reply_fn = self._replies.get(request.task)
        reply = reply_fn(request) if reply_fn is not None else fake_judge.default_reply(request)
        return reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)

    def _record(self, entry: RecordedRequest) -> None:
        with self._lock:
            s = self._stats
            s.requests += 1
            if entry.path == CHAT_PATH:
                s.chat_requests += 1
                if entry.task is not None:
                    s.by_task[entry.task] += 1
            else:
                s.embedding_requests += 1
                s.embedding_inputs += len(_inputs(entry.body) or ())
            s.prompt_tokens += entry.prompt_tokens
            s.completion_tokens += entry.completion_tokens
            self._recorded.append(entry)

    def handle(self, path: str, body: dict[str, Any], request_headers: Mapping[str, str]
               | None = None) -> tuple[int, dict[str, str], bytes | Stream | None]:
        """One request -> (status, headers, payload); payload None = drop the
        connection, a ``Stream`` = stream until the client leaves."""
        started = time.monotonic()
        request = fake_judge.identify(body) if path == CHAT_PATH else None
        task = request.task if request is not None else None
        rule = self._take_fault(path, task, body)
        self._wait(self.latency_s)
        fault = rule.fault if rule is not None else None
        prompt_tokens = completion_tokens = 0
        status, headers = 200, {}
        payload: bytes | Stream | None
        if fault is Fault.HANG:
            self._stopping.wait()
            payload = None
        elif fault is Fault.DISCONNECT:
            payload = None
        elif fault is Fault.GARBAGE:
            payload = b"\xff\xfe<html>upstream proxy says hi" + bytes(range(256))
        elif fault in (Fault.ENDLESS_BODY, Fault.HUGE_LENGTH):
            payload = Stream(chunked=fault is Fault.ENDLESS_BODY)
        elif rule is not None and fault is Fault.ECHO_HEADERS:
            quoted = "; ".join(f"{k}: {v}" for k, v in (request_headers or {}).items())
            status, payload = rule.status, _error(f"upstream refused the request ({quoted})",
                                                  "upstream_error")
        elif fault is Fault.UNAUTHORIZED:
            key = _bearer(request_headers or {})
            status, payload = 401, _error(
                f"Incorrect API key provided: {_openai_masked(key)}. You can find your API "
                "key at https://platform.openai.com/account/api-keys.", "invalid_api_key")
        elif fault is Fault.SERVER_ERROR:
            status, payload = 500, _error("injected server error", "server_error")
        elif rule is not None and fault is Fault.RATE_LIMIT:
            status, payload = 429, _error("injected rate limit", "rate_limit_exceeded")
            headers["Retry-After"] = f"{rule.retry_after_s:g}"
        elif fault is Fault.SCHEMA_UNSUPPORTED:
            status, payload = 400, _error("response_format json_schema is not supported",
                                          "invalid_request_error")
        elif rule is not None and rule.parameter is not None:
            status, payload = 400, _error(
                f"Unsupported parameter: '{rule.parameter}' is not supported with this model.",
                "invalid_request_error")
        elif path == CHAT_PATH:
            try:
                content = self._chat_content(body, request)
            except Exception as exc:  # a test's reply function failed: tell the client
                content = None
                status, payload = 500, _error(f"reply function failed: {exc!r}",
                                              "server_error")
            if content is not None:
                finish = "stop"
                if fault is Fault.INVALID_JSON:
                    content = "Sure! Here is what you asked for: {statements: [oops"
                elif fault is Fault.TRUNCATED:
                    content, finish = content[: max(1, len(content) // 2)], "length"
                prompt_tokens = count_message_tokens(body.get("messages") or [])
                raw_n = body.get("n")
                n = max(1, raw_n) if isinstance(raw_n, int) else 1
                completion_tokens = count_tokens(content) * n
                payload = self._chat_payload(content, finish, n, prompt_tokens,
                                             completion_tokens, rule)
        else:
            texts = _inputs(body)
            if texts is None:
                status, payload = 400, _error("input must be a string or a list of strings",
                                              "invalid_request_error")
            else:
                prompt_tokens = sum(count_tokens(t) for t in texts)
                payload = self._embeddings_payload(body, texts, prompt_tokens, rule)
        if fault is Fault.GZIPPED and isinstance(payload, bytes):
            payload = gzip.compress(payload)
            headers["Content-Encoding"] = "gzip"
        self._record(RecordedRequest(path, body, task, fault, prompt_tokens, completion_tokens,
                                     started, time.monotonic()))
        return status, headers, payload

    def _chat_payload(self, content: str, finish: str, n: int, prompt_tokens: int,
                      completion_tokens: int, rule: _Rule | None) -> bytes:
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens,
                                 "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        if rule is not None and rule.fault is Fault.BAD_USAGE:
            usage = dict.fromkeys(usage, rule.usage)
        return _dumps({
            "id": f"chatcmpl-fake-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": i, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": content}}
                        for i in range(n)],
            "usage": usage,
        })

    def _embeddings_payload(self, body: Mapping[str, Any], texts: list[str],
                            prompt_tokens: int, rule: _Rule | None) -> bytes:
        fault = rule.fault if rule is not None else None
        dim = body.get("dimensions") if isinstance(body.get("dimensions"), int) else None
        data = []
        for i, text in enumerate(texts):
            vector = fake_judge.embed(text, dim or self.embedding_dim)
            if fault is Fault.ZERO_EMBEDDINGS:
                vector = vector * 0.0
            elif fault is Fault.NAN_EMBEDDINGS:
                vector = vector * float("nan")
            elif fault is Fault.SHORT_EMBEDDINGS:
                vector = vector[: len(vector) // 2]
            elif fault is Fault.HUGE_EMBEDDINGS:
                vector = vector.astype("float64") * 1e300
            encoded: Any = (base64.b64encode(vector.astype("<f4").tobytes()).decode()
                            if body.get("encoding_format") == "base64" else vector.tolist())
            data.append({"object": "embedding", "index": i, "embedding": encoded})
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
        if rule is not None and rule.fault is Fault.BAD_USAGE:
            usage = dict.fromkeys(usage, rule.usage)
        return _dumps({"object": "list", "data": data, "model": str(body.get("model", "")),
                       "usage": usage})


@dataclass(frozen=True)
class Stream:
    """An endless 200 reply: chunked, or announcing a 1 TB ``Content-Length``."""

    chunked: bool


# Bounds the test server's own work if a client never stops reading.
STREAM_CAP_BYTES = 512 * 1024 * 1024
_STREAM_CHUNK = b'{"pad": "' + b"x" * (64 * 1024 - 12) + b'"},'


def _dumps(value: Any) -> bytes:
    # allow_nan: BAD_USAGE sends NaN / Infinity as Python's json module writes them
    return json.dumps(value, ensure_ascii=False, allow_nan=True).encode()


def _bearer(headers: Mapping[str, str]) -> str:
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
    return value.removeprefix("Bearer ").strip()


def _openai_masked(key: str) -> str:
    """The key as OpenAI's 401 text shows it: the first and last 4 characters."""
    return key[:4] + "*" * max(0, len(key) - 8) + key[-4:] if len(key) > 8 else "*" * len(key)


def _wants_schema(body: Mapping[str, Any]) -> bool:
    fmt = body.get("response_format")
    return isinstance(fmt, Mapping) and fmt.get("type") == "json_schema"


def _inputs(body: Mapping[str, Any]) -> list[str] | None:
    raw = body.get("input")
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
        return list(raw)
    return None


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": kind}}).encode()


def _make_handler(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            if path not in (CHAT_PATH, EMBEDDINGS_PATH):
                self._send(404, {}, _error(f"no route {path}", "not_found"))
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, {}, _error("body is not JSON", "invalid_request_error"))
                return
            if not isinstance(body, dict):
                self._send(400, {}, _error("body must be an object", "invalid_request_error"))
                return
            status, headers, payload = server.handle(path, body, dict(self.headers.items()))
            if payload is None:
                self.close_connection = True
                return
            if isinstance(payload, Stream):
                self._stream(payload)
                return
            self._send(status, headers, payload)

        def _stream(self, stream: Stream) -> None:
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if stream.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(10**12))
                self.end_headers()
                frame = (b"%x\r\n%s\r\n" % (len(_STREAM_CHUNK), _STREAM_CHUNK)
                         if stream.chunked else _STREAM_CHUNK)
                sent = 0
                while sent < STREAM_CAP_BYTES and not server._stopping.is_set():
                    self.wfile.write(frame)
                    sent += len(_STREAM_CHUNK)
                    server._count_streamed(len(_STREAM_CHUNK))
            except OSError:
                pass  # the client stopped reading: what the fault is for

        def _send(self, status: int, headers: Mapping[str, str], payload: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client went away (it timed out): nothing to tell it

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
