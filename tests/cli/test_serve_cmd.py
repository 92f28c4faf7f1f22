import json
import os
import signal
import subprocess
import sys
import urllib.request

import pytest

from ragas_trace.cli.main import main
from ragas_trace.gateway.settings import OPTIONS


def test_help_documents_every_option() -> None:
    out = subprocess.run([sys.executable, "-m", "ragas_trace.cli.main", "serve", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for option in OPTIONS:
        assert option.flag in out
        assert option.env in out
    assert "--config" in out


def test_bad_configuration_exits_2_with_a_message(capsys: object) -> None:
    assert main(["serve", "--forward-endpoint", "127.0.0.1:9", "--sample-rate", "7"]) == 2
    assert main(["serve", "--otlp-grpc", "127.0.0.1:0", "--otlp-http", "off"]) == 2


def _serve(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGAS_GATEWAY_", "RAGAS_TRACE_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "ragas_trace.cli.main", "serve", "--forward-endpoint",
         "127.0.0.1:9", "--judge", "off", "--log-format", "text", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("listen", [
    ["--otlp-grpc", "0.0.0.0:0", "--otlp-http", "off"],
    ["--otlp-grpc", "off", "--otlp-http", "[::]:0"],
    ["--otlp-grpc", "127.0.0.1:0", "--otlp-http", "192.0.2.10:0"],  # a LAN address
])
def test_a_non_loopback_address_without_a_token_refuses_to_start(listen: list[str]) -> None:
    proc = _serve(*listen)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    for name in ("--token-file", "RAGAS_GATEWAY_TOKEN", "--allow-unauthenticated"):
        assert name in err
    assert "without a bearer token" in err


def test_allow_unauthenticated_starts_and_warns() -> None:
    proc = _serve("--otlp-grpc", "off", "--otlp-http", "0.0.0.0:0",
                  "--allow-unauthenticated")
    try:
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline())
        assert ready["event"] == "ready"
        # Served; the check talks to it over loopback only.
        port = ready["otlp_http"].rsplit(":", 1)[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            assert r.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "WARNING" in err and "without a bearer token on 0.0.0.0:0" in err


def test_a_loopback_address_needs_no_token() -> None:
    proc = _serve("--otlp-grpc", "off", "--otlp-http", "localhost:0")
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["event"] == "ready"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "without a bearer token" not in err
