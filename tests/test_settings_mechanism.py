import argparse
import logging

import pytest

from ragas_trace._settings import (
    Setting,
    argument_type,
    integer,
    number,
    optional,
    port,
    resolve,
    text,
)

ROW = Setting("queue_size", "X_QUEUE_SIZE", 10, integer(1), "help")


def test_code_beats_environment_beats_file_beats_default() -> None:
    env = {"X_QUEUE_SIZE": "20"}
    assert resolve(ROW, 5, env, from_file=30) == 5
    assert resolve(ROW, None, env, from_file=30) == 20
    assert resolve(ROW, None, {}, from_file=30) == 30
    assert resolve(ROW, None, {}) == 10


def test_bad_value_in_code_or_file_raises_naming_it() -> None:
    with pytest.raises(ValueError, match="queue_size: expected an integer >= 1"):
        resolve(ROW, 0, {})
    with pytest.raises(ValueError, match="--queue-size"):
        resolve(ROW, "many", {}, label=ROW.flag)
    with pytest.raises(ValueError, match="config key 'queue_size'"):
        resolve(ROW, None, {}, from_file=2.5)


def test_bad_environment_value_is_logged_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ragas_trace"):
        assert resolve(ROW, None, {"X_QUEUE_SIZE": "lots"}) == 10
    assert "X_QUEUE_SIZE" in caplog.text


@pytest.mark.parametrize("bad", ["nan", "-1", True, "", None])
def test_number_rejects(bad: object) -> None:
    with pytest.raises(ValueError):
        number(0.0, 1.0)(bad)


def test_parsers() -> None:
    assert number(0.0, above=True)("0.5") == 0.5
    with pytest.raises(ValueError):
        number(0.0, above=True)(0)
    assert optional(text)("  ") is None
    assert text(" a ") == "a"
    assert port("8080") == 8080
    with pytest.raises(ValueError):
        port(70000)


def test_argument_type_gives_argparse_the_parsers_message(
        capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--n", type=argument_type(integer(1)))
    assert parser.parse_args(["--n", "3"]).n == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["--n", "0"])
    assert "argument --n: expected an integer >= 1, got '0'" in capsys.readouterr().err
