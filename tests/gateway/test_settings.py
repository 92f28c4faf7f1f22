from pathlib import Path

import pytest

from ragas_trace.gateway.settings import OPTIONS, GatewaySettings


def test_flag_beats_environment_beats_file_beats_default(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text('[serve]\nforward_endpoint = "file:4317"\nquiet_s = 5\n'
                      'sample_rate = 0.5\nforward_headers = {x-team = "rag"}\n')
    env = {"RAGAS_GATEWAY_QUIET_S": "3", "RAGAS_TRACE_SAMPLE_RATE": "0.25"}
    s = GatewaySettings.load({"quiet_s": "1.5"}, config_file=str(config), env=env)
    assert s.quiet_s == 1.5
    assert s.sample_rate == 0.25
    assert s.forward_endpoint == "file:4317"
    assert s.forward_headers == {"x-team": "rag"}
    assert s.otlp_grpc == "127.0.0.1:4317"  # default: loopback


def test_bad_values() -> None:
    with pytest.raises(ValueError, match="--sample-rate"):
        GatewaySettings.load({"sample_rate": "2"}, env={})
    with pytest.raises(ValueError, match="--otlp-grpc"):
        GatewaySettings.load({"otlp_grpc": "nonsense"}, env={})
    # A bad environment value is logged and ignored.
    assert GatewaySettings.load(env={"RAGAS_GATEWAY_QUIET_S": "soon"}).quiet_s == 2.0
    assert GatewaySettings.load({"otlp_http": "off"}, env={}).otlp_http is None


def test_config_file_errors_name_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("qiuet_s = 1\n")
    with pytest.raises(ValueError, match="qiuet_s"):
        GatewaySettings.load(config_file=str(config), env={})
    config.write_text("quiet_s = -1\n")
    with pytest.raises(ValueError, match="'quiet_s'"):
        GatewaySettings.load(config_file=str(config), env={})


def test_token_from_file_or_environment(tmp_path: Path) -> None:
    token = tmp_path / "t"
    token.write_text("abc\n")
    assert GatewaySettings.load({"token_file": str(token)}, env={}).token(env={}) == "abc"
    assert GatewaySettings.load(env={}).token(env={"RAGAS_GATEWAY_TOKEN": "xyz"}) == "xyz"
    assert GatewaySettings.load(env={}).token(env={}) is None


def test_every_option_has_a_distinct_flag_and_variable() -> None:
    assert len({o.flag for o in OPTIONS}) == len(OPTIONS)
    assert len({o.env for o in OPTIONS}) == len(OPTIONS)
