"""What the demo says when its telemetry does not arrive (issue 26, item 2): an
unreachable endpoint once, in one line, with what to start; the exporters' warnings
folded into it; exit 3 for "export failed", exit 1 only for "not every request was
scored"; no shutdown or scoring claim that did not happen."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import ragas_trace
from ragas_trace.cli.export_problems import folded_warnings, probe, same_address
from ragas_trace.cli.main import main
from ragas_trace.exporters.export_queue import LOST_MESSAGE
from ragas_trace.testing.openai_server import FakeOpenAIServer


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    source = str(Path(ragas_trace.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = source
    return subprocess.run([sys.executable, "-m", "ragas_trace.cli.main", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=240, check=False)


@pytest.mark.slow
def test_an_unreachable_endpoint_is_told_once_with_what_to_start(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    done = run_cli("demo", "--requests", "2", "--out", str(tmp_path / "out"),
                   "--otlp-endpoint", base, cwd=tmp_path)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "2 requests, 2 scored" in done.stdout
    [line] = [line for line in done.stderr.splitlines() if base in line]
    assert line.startswith(f"error: nothing is listening at {base}/v1/traces: start your "
                           "collector / Phoenix, or drop --otlp-endpoint (")
    assert f"metrics export(s) to {base}/v1/metrics" in line  # the same collector: one line
    assert "exporter warning(s) folded into this line; -v shows them" in line
    for wrong in ("Transient error", "Failed to export", "did not shut down",
                  "not scored", "not every request", "span(s) not exported ("):
        assert wrong not in done.stderr


def test_requests_left_unscored_exit_1_with_their_statuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(latency_s=5.0) as server:  # slower than the hold timeout
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("RAGAS_TRACE_JUDGE_MAX_RETRIES", "0")
        monkeypatch.setenv("RAGAS_TRACE_HOLD_TIMEOUT_S", "0.5")
        code = main(["demo", "--requests", "2", "--out", str(tmp_path), "--judge", "openai"])
    assert code == 1
    out, err = capsys.readouterr()
    assert "2 requests, 0 scored" in out
    assert "warning: 2 of 2 requests were not scored (timeout 2)" in err
    assert "could not be exported" not in err


def test_exporter_noise_is_folded_and_counted_the_rest_passes(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), folded_warnings(fold_losses=True) as folded:
        logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").warning(
            "Transient error")
        logging.getLogger("urllib3.connectionpool").warning("Retrying")
        logging.getLogger("ragas_trace").warning(LOST_MESSAGE, 3, "export_failed")
        logging.getLogger("ragas_trace").warning("something else")
    assert folded.count == 3
    assert [r.getMessage() for r in caplog.records] == ["something else"]


def test_verbose_shows_the_noise_and_losses_are_kept_unless_counted_elsewhere(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        with folded_warnings(enabled=False) as shown:
            logging.getLogger("urllib3.connectionpool").warning("Retrying")
        with folded_warnings(fold_losses=False) as kept:
            logging.getLogger("ragas_trace").warning(LOST_MESSAGE, 3, "export_failed")
    assert shown.count == kept.count == 0
    assert len(caplog.records) == 2


def test_probe_tells_a_closed_port_from_a_listening_one() -> None:
    port = closed_port()
    assert probe(f"http://127.0.0.1:{port}/v1/traces") == \
        f"nothing is listening at http://127.0.0.1:{port}/v1/traces"
    assert probe(f"127.0.0.1:{port}") == f"nothing is listening at 127.0.0.1:{port}"
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert probe(f"http://127.0.0.1:{listening.getsockname()[1]}/v1/traces") is None


def test_same_address_compares_host_and_port_only() -> None:
    assert same_address("http://c:4318/v1/traces", "http://c:4318/v1/metrics")
    assert not same_address("http://c:4318/v1/traces", "http://m:9/ingest")
