import subprocess
import sys

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
