"""The docker compose kit cannot run here (no Docker); these checks catch what a
first ``docker compose up`` would trip on: a missing mount, a typo in a service
name or port, a collector pipeline naming an undefined component."""

from typing import Any
from urllib.parse import urlsplit

from deploy_kit import DEPLOY, load_yaml

COMPOSE = DEPLOY / "docker-compose.yml"


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(COMPOSE)
    return data


def _collector() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(DEPLOY / "otel-collector.yaml")
    return data


def _host_port(address: str) -> tuple[str, int]:
    parts = urlsplit(address if "//" in address else f"//{address}")
    assert parts.hostname and parts.port, address
    return parts.hostname, parts.port


def test_compose_runs_the_five_services_from_pinned_images() -> None:
    services = _compose()["services"]
    assert set(services) == {"otel-collector", "jaeger", "tempo", "prometheus", "grafana"}
    for name, service in services.items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), name
        for dep in service.get("depends_on", []):
            assert dep in services, (name, dep)


def test_every_bind_mount_exists_in_the_kit() -> None:
    named = set(_compose().get("volumes") or {})
    for name, service in _compose()["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), (name, source)
            else:
                assert source in named, (name, source)


def _mount(service: str, target: str) -> str:
    for volume in _compose()["services"][service]["volumes"]:
        source, mounted = volume.split(":")[:2]
        if mounted == target:
            return str(source)
    raise AssertionError(f"{service} mounts nothing at {target}")


def test_collector_pipelines_are_complete_and_reach_the_backends() -> None:
    config = _collector()
    for pipeline in config["service"]["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in config[kind], component
    exporters = config["exporters"]
    tempo = load_yaml(DEPLOY / "tempo.yaml")
    tempo_grpc = tempo["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    assert _host_port(exporters["otlp/tempo"]["endpoint"]) == ("tempo", _host_port(tempo_grpc)[1])
    assert _host_port(exporters["otlp/jaeger"]["endpoint"]) == ("jaeger", 4317)
    assert _compose()["services"]["jaeger"]["environment"]["COLLECTOR_OTLP_ENABLED"] == "true"
    published = _compose()["services"]["otel-collector"]["ports"]
    for protocol in ("grpc", "http"):
        port = _host_port(config["receivers"]["otlp"]["protocols"][protocol]["endpoint"])[1]
        assert f"{port}:{port}" in published
    command = _compose()["services"]["otel-collector"]["command"][0]
    assert _mount("otel-collector", command.split("=", 1)[1]) == "./otel-collector.yaml"


def test_prometheus_scrapes_the_collector_and_loads_the_mounted_rules() -> None:
    prometheus = load_yaml(DEPLOY / "prometheus" / "prometheus.yml")
    exporter_port = _host_port(_collector()["exporters"]["prometheus"]["endpoint"])[1]
    targets = [t for job in prometheus["scrape_configs"] for sc in job["static_configs"]
               for t in sc["targets"]]
    assert targets == [f"otel-collector:{exporter_port}"]
    assert _mount("prometheus", "/etc/prometheus") == "./prometheus"
    for rule_file in prometheus["rule_files"]:
        assert (DEPLOY / "prometheus" / rule_file).is_file()


def test_grafana_provisions_reachable_datasources_and_the_dashboard() -> None:
    provisioning = _mount("grafana", "/etc/grafana/provisioning")
    assert (DEPLOY / provisioning).resolve() == (DEPLOY / "grafana" / "provisioning").resolve()
    sources = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "datasources.yaml")
    tempo_http = load_yaml(DEPLOY / "tempo.yaml")["server"]["http_listen_port"]
    expected = {"prometheus": ("prometheus", 9090), "tempo": ("tempo", tempo_http),
                "jaeger": ("jaeger", 16686)}
    assert {d["type"]: _host_port(d["url"]) for d in sources["datasources"]} == expected
    providers = load_yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "dashboards.yaml")
    path = providers["providers"][0]["options"]["path"]
    assert (DEPLOY / _mount("grafana", path) / "ragas-trace.json").is_file()


def test_exemplars_travel_from_the_collector_to_prometheus() -> None:
    assert _collector()["exporters"]["prometheus"]["enable_open_metrics"] is True
    assert "--enable-feature=exemplar-storage" in _compose()["services"]["prometheus"]["command"]
