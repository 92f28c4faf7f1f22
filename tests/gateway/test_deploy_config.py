"""The Collector config for scale-out routes traces by trace ID to the replicas, as
the three-replica test's router does."""

from pathlib import Path

import yaml

CONFIG = Path(__file__).parents[2] / "deploy" / "collector-loadbalancing.yaml"


def test_traces_go_through_the_trace_id_loadbalancer() -> None:
    config = yaml.safe_load(CONFIG.read_text())
    pipeline = config["service"]["pipelines"]["traces"]
    assert pipeline["exporters"] == ["loadbalancing"]
    assert set(pipeline["receivers"]) <= set(config["receivers"])
    assert set(pipeline["processors"]) <= set(config["processors"])
    lb = config["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID"
    hostnames = lb["resolver"]["static"]["hostnames"]
    assert len(hostnames) == len(set(hostnames)) >= 2
    assert all(h.rsplit(":", 1)[1] == "4317" for h in hostnames)
    assert lb["protocol"]["otlp"]["headers"]["authorization"].startswith("Bearer ")
