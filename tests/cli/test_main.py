from importlib import metadata

import pytest

from ragas_trace.cli.main import main, plain_text


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"ragas-trace {metadata.version('ragas-trace')}"


@pytest.mark.parametrize("command", ["demo", "serve", "eval", "score"])
def test_help_is_plain_text(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert f"ragas-trace {command}" in out
    assert "``" not in out


def test_plain_text_drops_literal_markup_only() -> None:
    assert plain_text("rows of ``dev-cases.jsonl`` (a `split`)") == \
        "rows of dev-cases.jsonl (a `split`)"
    assert plain_text(None) is None
