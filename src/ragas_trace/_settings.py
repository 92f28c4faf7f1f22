"""The one mechanism behind every settings table (library, judge, collectors,
gateway): a row names the setting, its environment variable, default, parser and
help; ``resolve`` applies the precedence. A value given in code (keyword or flag)
beats the environment, which beats a config file, which beats the default. A bad
value given in code or in a file raises ``ValueError`` naming it; a bad
environment value is logged and skipped, so a typo in a deployment never takes the
app down."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

logger = logging.getLogger("ragas_trace")

Parse = Callable[[object], Any]
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    default: Any
    parse: Parse
    help: str
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def resolve(setting: Setting, given: object, environ: Mapping[str, str],
            from_file: object = None, label: str | None = None) -> Any:
    """``given`` (when not None) > ``environ`` > ``from_file`` (when not None) > default.

    ``label`` names the setting in errors (default: its name).
    """
    if given is not None:
        try:
            return setting.parse(given)
        except ValueError as exc:
            raise ValueError(f"{label or setting.name}: {exc}") from None
    raw = environ.get(setting.env)
    if raw is not None and raw.strip():
        try:
            return setting.parse(raw)
        except ValueError as exc:
            logger.warning("ignoring %s=%r (%s)", setting.env, raw, exc)
    if from_file is not None:
        try:
            return setting.parse(from_file)
        except ValueError as exc:
            raise ValueError(f"config key {setting.name!r}: {exc}") from None
    return setting.default


def check_fields(table: Sequence[Setting], cls: type) -> None:
    """Fail at import when a table and the dataclass it fills drift apart."""
    if [s.name for s in table] != [f.name for f in fields(cls)]:
        raise RuntimeError(f"settings table and {cls.__name__} fields differ")


# -- parsers: each takes a value from code, a file or the environment ---------------

def text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value.strip()


def boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected true or false, got {value!r}")


def auto_boolean(value: object) -> bool | None:
    """``auto`` (``None``: the code decides) or a boolean."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    try:
        return boolean(value)
    except ValueError:
        raise ValueError(f"expected auto, true or false, got {value!r}") from None


def number(low: float = float("-inf"), high: float = float("inf"),
           *, above: bool = False) -> Parse:
    """A float in [low, high] (or (low, high] with ``above``)."""
    def parse(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"expected a number, got {value!r}")
        try:
            result = float(value)
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
        if result != result or not low <= result <= high or (above and result == low):
            bound = f"> {low}" if above else f"in [{low}, {high}]"
            raise ValueError(f"expected a number {bound}, got {value!r}")
        return result
    return parse


def integer(low: int, high: int | None = None) -> Parse:
    def parse(value: object) -> int:
        result = number()(value)
        if not result.is_integer():
            raise ValueError(f"expected an integer, got {value!r}")
        if result < low or (high is not None and result > high):
            bound = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise ValueError(f"expected an integer {bound}, got {value!r}")
        return int(result)
    return parse


def choice(*choices: str) -> Parse:
    def parse(value: object) -> str:
        lowered = value.strip().lower() if isinstance(value, str) else value
        if lowered not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return str(lowered)
    return parse


def optional(parse: Parse) -> Parse:
    """``parse``, with None or an empty string meaning unset."""
    def parse_optional(value: object) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return parse(value)
    return parse_optional


port = integer(0, 65535)


def argument_type(parse: Parse) -> Callable[[str], Any]:
    """``parse`` as an argparse ``type=``: its message, not argparse's generic one."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return convert


def _cell(text: str) -> str:
    """A table cell: a ``|`` inside it would end the cell; argparse's ``%%`` is ``%``."""
    return text.replace("%%", "%").replace("|", "\\|")


def _default(value: Any) -> str:
    return "unset" if value in (None, ()) else f"`{value}`"


def settings_table(table: Sequence[Setting], *, as_flags: bool = False) -> str:
    """The Markdown table of ``table`` (keyword or flag, environment variable,
    default, meaning): the documentation's settings tables are generated from it,
    so they cannot drift from the code."""
    first = "flag" if as_flags else "keyword"
    lines = [f"| {first} | environment variable | default | meaning |",
             "| --- | --- | --- | --- |"]
    for s in table:
        name = f"{s.flag} {s.metavar}" if as_flags and s.metavar else (
            s.flag if as_flags else s.name)
        lines.append(f"| `{_cell(name)}` | `{s.env}` | {_cell(_default(s.default))} | "
                     f"{_cell(s.help)} |")
    return "\n".join(lines)
