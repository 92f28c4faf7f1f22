"""Bearer-token check and TLS material, shared by the gRPC and HTTP receivers."""

from __future__ import annotations

import hmac
import ipaddress
import ssl
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Security:
    """``token``: required as ``Authorization: Bearer <token>`` when set.
    ``tls_cert`` / ``tls_key``: PEM files; both or neither."""

    token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def __post_init__(self) -> None:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key must be given together")
        if self.token is not None and not self.token.strip():
            raise ValueError("token must not be empty")

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def authorized(self, header: str | None) -> bool:
        if self.token is None:
            return True
        if not header:
            return False
        scheme, _, value = header.strip().partition(" ")
        # Constant-time comparison: the token must not leak through response timing.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            value.strip().encode(), self.token.encode())

    def ssl_context(self) -> ssl.SSLContext | None:
        if self.tls_cert is None or self.tls_key is None:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.tls_cert, self.tls_key)
        return context

    def grpc_credentials(self) -> Any:
        if self.tls_cert is None or self.tls_key is None:
            return None
        import grpc
        with open(self.tls_key, "rb") as key, open(self.tls_cert, "rb") as cert:
            return grpc.ssl_server_credentials([(key.read(), cert.read())])


def is_loopback(host: str) -> bool:
    """Whether ``host`` (of a listen address) is reachable from this machine only.
    A host name other than ``localhost`` counts as reachable from elsewhere: what it
    resolves to is not known here."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
