"""Every setting of ``ragas-trace serve``, in one table: name (also the config-file
key and, with dashes, the flag), environment variable, default, parser, help.

A flag beats the environment, which beats the config file (TOML), which beats the
default. A bad flag or config-file value is an error naming it; a bad environment
value is logged and ignored. Scoring settings not listed here (thresholds, hold
timeout, content policy...) are the library's, read from its own ``RAGAS_TRACE_*``
variables (docs/reference/settings.md)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragas_trace._settings import (
    Setting,
    auto_boolean,
    boolean,
    check_fields,
    choice,
    integer,
    number,
    optional,
    resolve,
    text,
)
from ragas_trace.exporters.annotations import annotation_names
from ragas_trace.gateway.security import is_loopback


def _address(value: object) -> str | None:
    """``HOST:PORT``, or ``off`` to disable the receiver."""
    address = text(value)
    if address.lower() in ("off", "none", "disabled"):
        return None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT or 'off', got {value!r}")
    return address


def _headers(value: object) -> dict[str, str]:
    """``key=value,key2=value2`` (the ``OTEL_EXPORTER_OTLP_HEADERS`` format) or a table."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    out: dict[str, str] = {}
    for part in text(value).split(","):
        key, sep, val = part.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"expected key=value pairs separated by commas, got {value!r}")
        out[key.strip()] = val.strip()
    return out


def _names(value: object) -> tuple[str, ...]:
    """``a,b,c`` or a list of strings."""
    items = value if isinstance(value, list | tuple) else text(value).split(",")
    names = tuple(str(item).strip() for item in items if str(item).strip())
    if not names:
        raise ValueError(f"expected names separated by commas, got {value!r}")
    return names


_MIB = 1 << 20
OPTIONS: tuple[Setting, ...] = (
    Setting("otlp_grpc", "RAGAS_GATEWAY_OTLP_GRPC", "127.0.0.1:4317", _address,
           "OTLP/gRPC listen address, or 'off'", "HOST:PORT"),
    Setting("otlp_http", "RAGAS_GATEWAY_OTLP_HTTP", "127.0.0.1:4318", _address,
           "OTLP/HTTP listen address (protobuf and JSON, plus GET /health), or 'off'",
           "HOST:PORT"),
    Setting("forward_endpoint", "RAGAS_GATEWAY_FORWARD_ENDPOINT", None, optional(text),
           "next OTLP hop: host:port or http(s)://host:port for gRPC; for HTTP a base URL "
           "(/v1/traces appended) or the traces URL itself (required)", "URL"),
    Setting("forward_protocol", "RAGAS_GATEWAY_FORWARD_PROTOCOL", "grpc", choice("grpc", "http"),
           "protocol of the next hop", "grpc|http"),
    Setting("forward_headers", "RAGAS_GATEWAY_FORWARD_HEADERS", None, optional(_headers),
           "headers sent to the next hop, k=v,k2=v2", "K=V,..."),
    Setting("forward_gzip", "RAGAS_GATEWAY_FORWARD_GZIP", False, boolean,
           "gzip what is sent to the next hop", "BOOL"),
    Setting("forward_ca_file", "RAGAS_GATEWAY_FORWARD_CA_FILE", None, optional(text),
           "PEM file of CAs that sign the next hop's TLS certificate", "PATH"),
    Setting("forward_max_batch_bytes", "RAGAS_GATEWAY_FORWARD_MAX_BATCH_BYTES",
           3 * _MIB + _MIB // 2, integer(64 * 1024),
           "largest export request sent to the next hop (keep it below the next hop's "
           "limit, 4 MiB for a default gRPC server); a larger received request is split, "
           "a single larger span is dropped (counted as span_too_large)", "BYTES"),
    Setting("forward_timeout_s", "RAGAS_GATEWAY_FORWARD_TIMEOUT_S", 10.0, number(0.1),
           "timeout of one export call to the next hop", "SECONDS"),
    Setting("queue_spans", "RAGAS_GATEWAY_QUEUE_SPANS", 20_000, integer(10),
           "spans waiting for the next hop; receivers answer 'retry later' once 90%% full, "
           "past 100%% spans are dropped (counted); a request of more spans than 90%% "
           "is refused for good (HTTP 413, gRPC RESOURCE_EXHAUSTED)", "N"),
    Setting("queue_bytes", "RAGAS_GATEWAY_QUEUE_BYTES", 128 * _MIB, integer(_MIB),
           "bytes of spans waiting for the next hop, bounded like --queue-spans (a "
           "request larger than 90%% is refused for good)", "BYTES"),
    Setting("retry_for_s", "RAGAS_GATEWAY_RETRY_FOR_S", 30.0, number(0.0),
           "how long a batch is retried while the next hop fails before it is dropped",
           "SECONDS"),
    Setting("token_file", "RAGAS_GATEWAY_TOKEN_FILE", None, optional(text),
           "file holding the bearer token senders must present (both protocols); "
           "RAGAS_GATEWAY_TOKEN sets the token itself", "PATH"),
    Setting("tls_cert", "RAGAS_GATEWAY_TLS_CERT", None, optional(text),
           "PEM certificate: serve both receivers over TLS (with --tls-key)", "PATH"),
    Setting("tls_key", "RAGAS_GATEWAY_TLS_KEY", None, optional(text),
           "PEM private key of --tls-cert", "PATH"),
    Setting("allow_unauthenticated", "RAGAS_GATEWAY_ALLOW_UNAUTHENTICATED", False, boolean,
           "accept exports without a bearer token on a non-loopback address (without "
           "it, such an address and no token refuse to start); logs a warning", "BOOL"),
    Setting("max_request_bytes", "RAGAS_GATEWAY_MAX_REQUEST_BYTES", 4 * _MIB, integer(1024),
           "largest request accepted, after decompression", "BYTES"),
    Setting("max_attributes", "RAGAS_GATEWAY_MAX_ATTRIBUTES", 1024, integer(1),
           "when scoring, a span with more attributes is rejected (OTLP partial "
           "success); with --judge off spans are not decoded and only their ids "
           "are checked", "N"),
    Setting("max_events", "RAGAS_GATEWAY_MAX_EVENTS", 1024, integer(0),
           "when scoring, a span with more events is rejected", "N"),
    Setting("max_links", "RAGAS_GATEWAY_MAX_LINKS", 1024, integer(0),
           "when scoring, a span with more links is rejected", "N"),
    Setting("max_connections", "RAGAS_GATEWAY_MAX_CONNECTIONS", 64, integer(1),
           "HTTP requests whose body is being read or handled at once, and concurrent "
           "gRPC calls", "N"),
    Setting("max_http_connections", "RAGAS_GATEWAY_MAX_HTTP_CONNECTIONS", 1024, integer(1),
           "open HTTP connections; past it the one idle or sending its request the "
           "longest is closed to make room, so slow clients cannot lock others out", "N"),
    Setting("request_timeout_s", "RAGAS_GATEWAY_REQUEST_TIMEOUT_S", 10.0, number(0.1),
           "total time an HTTP client has to send one request's headers and body "
           "(also how long an idle keep-alive connection stays open)", "SECONDS"),
    Setting("quiet_s", "RAGAS_GATEWAY_QUIET_S", 2.0, number(0.01),
           "a RAG trace is scored once its root and a retrieval are in and nothing new "
           "arrived for this long", "SECONDS"),
    Setting("max_wait_s", "RAGAS_GATEWAY_MAX_WAIT_S", 10.0, number(0.01),
           "longest a RAG root waits for the rest of its trace", "SECONDS"),
    Setting("max_trace_spans", "RAGAS_GATEWAY_MAX_TRACE_SPANS", 50_000, integer(1),
           "spans remembered for trace reassembly; past it the oldest trace is "
           "released early", "N"),
    Setting("max_trace_bytes", "RAGAS_GATEWAY_MAX_TRACE_BYTES", 128 * _MIB, integer(_MIB),
           "bytes of spans remembered for trace reassembly, bounded like "
           "--max-trace-spans", "BYTES"),
    Setting("app_names", "RAGAS_GATEWAY_APP_NAMES", None, optional(_names),
           "root span names that may be the `app` label of the scores' metrics; the "
           "label is ragas.app.name when a root has it, else its name if listed here, "
           "else 'unknown' (senders' span names never make labels of their own)",
           "NAME,..."),
    Setting("judge", "RAGAS_TRACE_JUDGE", "local", choice("local", "openai", "off"),
           "judge of the scorer; 'off' forwards without scoring", "local|openai|off"),
    Setting("idle_priority", "RAGAS_GATEWAY_IDLE_PRIORITY", None, auto_boolean,
           "run at idle CPU priority (Linux SCHED_IDLE, else nice 19), so that on a host "
           "shared with the app the judge takes only the CPU the app leaves; unset or "
           "'auto': on when every receiver listens on loopback only (a per-host sidecar)",
           "auto|BOOL"),
    Setting("sample_rate", "RAGAS_TRACE_SAMPLE_RATE", None, optional(number(0.0, 1.0)),
           "fraction of RAG traces scored, by trace id (library default 1.0)", "R"),
    Setting("annotations", "RAGAS_TRACE_ANNOTATIONS", None, optional(annotation_names),
           "also write scores as Phoenix span annotations / Langfuse scores (where: "
           "PHOENIX_COLLECTOR_ENDPOINT, LANGFUSE_HOST...)", "phoenix,langfuse"),
    Setting("metrics_port", "RAGAS_TRACE_METRICS_PORT", None, optional(integer(0)),
           "serve Prometheus metrics on this port", "PORT"),
    Setting("metrics_host", "RAGAS_GATEWAY_METRICS_HOST", "127.0.0.1", text,
           "address of the Prometheus endpoint", "HOST"),
    Setting("service_name", "OTEL_SERVICE_NAME", "ragas-trace-gateway", text,
           "service.name of the gateway's own spans and `service` label of its metrics",
           "NAME"),
    Setting("shutdown_timeout_s", "RAGAS_GATEWAY_SHUTDOWN_TIMEOUT_S", 10.0, number(0.1),
           "on SIGTERM/SIGINT: time allowed to score what is held and forward everything",
           "SECONDS"),
    Setting("log_format", "RAGAS_GATEWAY_LOG_FORMAT", "json", choice("json", "text"),
           "log lines as JSON objects or plain text", "json|text"),
    Setting("log_level", "RAGAS_GATEWAY_LOG_LEVEL", "info",
           choice("debug", "info", "warning", "error"), "least severe level logged",
           "LEVEL"),
)


@dataclass(frozen=True)
class GatewaySettings:
    otlp_grpc: str | None
    otlp_http: str | None
    forward_endpoint: str | None
    forward_protocol: str
    forward_headers: dict[str, str] | None
    forward_gzip: bool
    forward_ca_file: str | None
    forward_max_batch_bytes: int
    forward_timeout_s: float
    queue_spans: int
    queue_bytes: int
    retry_for_s: float
    token_file: str | None
    tls_cert: str | None
    tls_key: str | None
    allow_unauthenticated: bool
    max_request_bytes: int
    max_attributes: int
    max_events: int
    max_links: int
    max_connections: int
    max_http_connections: int
    request_timeout_s: float
    quiet_s: float
    max_wait_s: float
    max_trace_spans: int
    max_trace_bytes: int
    app_names: tuple[str, ...] | None
    judge: str
    idle_priority: bool | None
    sample_rate: float | None
    annotations: tuple[str, ...] | None
    metrics_port: int | None
    metrics_host: str
    service_name: str
    shutdown_timeout_s: float
    log_format: str
    log_level: str

    @classmethod
    def load(cls, flags: Mapping[str, Any] | None = None, *, config_file: str | None = None,
             env: Mapping[str, str] | None = None) -> GatewaySettings:
        """Flags (values not None) > environment > config file > default.

        Raises ``ValueError`` naming the flag or config key for a bad value, and for a
        config file that cannot be read or has unknown keys.
        """
        environ = os.environ if env is None else env
        flags = flags or {}
        from_file = read_config_file(config_file) if config_file else {}
        values: dict[str, Any] = {}
        for option in OPTIONS:
            values[option.name] = resolve(option, flags.get(option.name), environ,
                                          from_file.get(option.name), label=option.flag)
        return cls(**values)

    @property
    def runs_at_idle_priority(self) -> bool:
        """``idle_priority``, with ``auto`` resolved: a gateway that only its own host can
        reach is a sidecar sharing the host's CPU with the app."""
        if self.idle_priority is not None:
            return self.idle_priority
        return all(is_loopback(address.rpartition(":")[0])
                   for address in (self.otlp_grpc, self.otlp_http) if address)

    def token(self, env: Mapping[str, str] | None = None) -> str | None:
        """The bearer token: from ``token_file``, else ``RAGAS_GATEWAY_TOKEN``."""
        if self.token_file:
            with open(self.token_file, encoding="utf-8") as f:
                token = f.read().strip()
            if not token:
                raise ValueError(f"token file {self.token_file!r} is empty")
            return token
        token = (os.environ if env is None else env).get("RAGAS_GATEWAY_TOKEN", "").strip()
        return token or None


def read_config_file(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"config file {path!r}: {exc}") from None
    table = data.get("serve", data)
    known = {o.name for o in OPTIONS}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ValueError(f"config file {path!r}: unknown key(s) {', '.join(unknown)}")
    return dict(table)


check_fields(OPTIONS, GatewaySettings)
