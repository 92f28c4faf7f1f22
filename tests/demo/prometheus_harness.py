"""A real Prometheus (Debian's package) on 127.0.0.1 for the end-to-end alert test:
a free port, a temporary data directory, the project's alert rules with every
duration divided by a time-scale factor, and a 1 s scrape/evaluation interval."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _scaled(duration: str, factor: int) -> str:
    total = sum(int(n) * _SECONDS[unit] for n, unit in _DURATION.findall(duration))
    scaled = total / factor
    if scaled != int(scaled) or scaled < 1:
        raise ValueError(f"{duration} does not divide into whole seconds by {factor}")
    return f"{int(scaled)}s"


def scale_rules(rules: Mapping[str, Any], factor: int) -> dict[str, Any]:
    """The same rules with every range, offset and ``for:`` divided by ``factor``:
    thresholds and expressions stay exactly as shipped, only time is compressed."""
    groups = []
    for group in rules["groups"]:
        scaled_rules = []
        for rule in group["rules"]:
            rule = dict(rule)
            rule["expr"] = re.sub(
                r"\[(\w+)\]|offset (\w+)",
                lambda m: (f"[{_scaled(m.group(1), factor)}]" if m.group(1)
                           else f"offset {_scaled(m.group(2), factor)}"),
                rule["expr"],
            )
            if "for" in rule:
                rule["for"] = _scaled(rule["for"], factor)
            scaled_rules.append(rule)
        groups.append({**group, "rules": scaled_rules})
    return {"groups": groups}


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as response:
            return json.loads(response.read())

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self.get("/api/v1/alerts")["data"]["alerts"]
        return alerts

    def query(self, expr: str) -> list[dict[str, Any]]:
        from urllib.parse import quote

        result: list[dict[str, Any]] = self.get(f"/api/v1/query?query={quote(expr)}")["data"][
            "result"]
        return result

    def targets_up(self) -> dict[str, str]:
        active = self.get("/api/v1/targets")["data"]["activeTargets"]
        return {t["labels"]["job"]: t["health"] for t in active}


@contextmanager
def running_prometheus(
    workdir: Path, rules: Mapping[str, Any], targets: Mapping[str, int], timeout_s: float = 30.0,
    features: Sequence[str] = (),
) -> Iterator[Prometheus]:
    """Prometheus scraping ``targets`` (job name -> port on 127.0.0.1) every second;
    ``features``: for ``--enable-feature`` (``exemplar-storage``)."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise FileNotFoundError("prometheus")
    (workdir / "rules.yml").write_text(yaml.safe_dump(dict(rules)), encoding="utf-8")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules.yml"],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
            for job, port in targets.items()
        ],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    log = (workdir / "prometheus.log").open("w")
    process = subprocess.Popen(
        [binary, f"--config.file={workdir / 'prometheus.yml'}",
         f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
         *(f"--enable-feature={feature}" for feature in features)],
        stdout=log, stderr=subprocess.STDOUT,
    )
    prometheus = Prometheus(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                raise RuntimeError("prometheus exited: "
                                   + (workdir / "prometheus.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(prometheus.url + "/-/ready", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError("prometheus not ready") from None
                time.sleep(0.2)
        yield prometheus
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


@contextmanager
def scraping_or_skip(workdir: Path, targets: Mapping[str, int]) -> Iterator[Prometheus]:
    """A Prometheus with no rules scraping ``targets``; the test is skipped where
    Debian's package is not installed."""
    import pytest

    if shutil.which("prometheus") is None:
        pytest.skip("prometheus not installed (apt-get install prometheus; .ci/run does)")
    with running_prometheus(workdir, {"groups": []}, targets) as prometheus:
        yield prometheus
