"""What the ``eval`` and ``score`` commands share: reading JSON lines with line
numbers in errors, running many judge calls with bounded concurrency while keeping
input order, and a one-line progress report on stderr."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeVar

from ragas_trace._settings import argument_type, integer
from ragas_trace.judges.base import Judge

T = TypeVar("T")


class InputError(ValueError):
    """A bad input line or file; the message names the file (and the line)."""


_BOM = b"\xef\xbb\xbf"
# JSON's names for the types json.loads gives, for messages about a field's type.
_JSON_TYPES = {str: "a string", bool: "true or false", int: "a number", float: "a number",
               list: "an array", dict: "an object", type(None): "null"}


def file_problem(flag: str, path: Path, exc: OSError) -> str:
    """An ``OSError`` on the file given with ``flag``, in words ("--input x.jsonl: no
    such file"), without Python's errno."""
    if isinstance(exc, FileNotFoundError):
        what = "no such file" if path.parent.is_dir() else f"no such directory {path.parent}"
    elif isinstance(exc, IsADirectoryError):
        what = "is a directory, not a file"
    elif isinstance(exc, PermissionError):
        what = "permission denied"
    else:
        what = (exc.strerror or type(exc).__name__).lower()
    return f"{flag} {path}: {what}"


def _lines(path: Path, flag: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each line, a UTF-8 byte-order mark at the start left
    out; ``InputError`` when the file cannot be opened or read."""
    try:
        with path.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                yield number, line.removeprefix(_BOM) if number == 1 else line
    except OSError as exc:
        raise InputError(file_problem(flag, path, exc)) from None


def jsonl_rows(path: Path, flag: str = "--input"
               ) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """(line number, object) for each non-blank line, or (line number, the
    ``InputError``) for a line that is not UTF-8 or not a JSON object; reading goes on
    after it. Lines are decoded one by one, so one bad byte costs one line."""
    for number, raw in _lines(path, flag):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield number, InputError(f"{path}:{number}: not UTF-8 text (byte "
                                     f"0x{raw[exc.start]:02x} at column {exc.start + 1})")
            continue
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except RecursionError:
            yield number, InputError(f"{path}:{number}: JSON nested too deeply")
            continue
        except ValueError as exc:
            yield number, InputError(f"{path}:{number}: not JSON ({exc})")
            continue
        if not isinstance(value, dict):
            yield number, InputError(f"{path}:{number}: expected a JSON object, got "
                                     f"{json_type(value)}")
            continue
        yield number, value


def read_jsonl(path: Path, flag: str = "--input") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; ``InputError`` for a bad one."""
    for number, row in jsonl_rows(path, flag):
        if isinstance(row, InputError):
            raise row
        yield number, row


def json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def text_field_problems(row: dict[str, Any], fields: Iterable[str]) -> list[str]:
    """What is wrong with the text ``fields`` of ``row``: each one absent ("missing
    'answer'") or not a string ("'question' is a number, not a string")."""
    return [f"missing {f!r}" if f not in row else
            f"{f!r} is {json_type(row[f])}, not a string"
            for f in fields if not isinstance(row.get(f), str)]


def judge_problem(spec: str) -> str | None:
    """Why the judge ``--judge spec`` cannot be made, in the command line's terms (the
    environment variable to set) rather than the library's (``api_key=``); None when
    nothing is known to be missing."""
    from ragas_trace.judges import settings as judge_settings

    if spec.partition(":")[0] != "openai":
        return None
    configured = judge_settings.resolve_all({})
    if configured["api_key"] is None and configured["base_url"] is None:
        return (f"--judge {spec} needs an API key: set OPENAI_API_KEY (or OPENAI_BASE_URL "
                "for an OpenAI-compatible endpoint that needs none)")
    return None


def cli_judge(spec: str) -> Judge:
    """The judge ``--judge spec`` names; ``ValueError`` in the command line's terms."""
    from ragas_trace.judges import resolve_judge

    problem = judge_problem(spec)
    if problem is not None:
        raise ValueError(problem)
    return resolve_judge(spec)


positive_int = argument_type(integer(1))  # an argparse type: an integer of at least 1


def count_lines(path: Path, flag: str = "--input") -> int:
    """Non-blank lines, read as bytes (a line that is not UTF-8 counts: it is reported
    when reached)."""
    return sum(1 for _, line in _lines(path, flag) if line.strip())


async def in_order(jobs: Iterable[Awaitable[T]], concurrency: int) -> AsyncIterator[T]:
    """Results of ``jobs`` in input order, at most ``concurrency`` running at once;
    jobs are pulled from the iterable only as room frees up (bounded memory)."""
    window: deque[asyncio.Task[T]] = deque()
    source = iter(jobs)
    for job in source:
        window.append(asyncio.ensure_future(job))
        if len(window) >= concurrency:
            yield await window.popleft()
    while window:
        yield await window.popleft()


class Progress:
    """``label done/total`` on one stderr line, redrawn at most 5 times a second on a
    terminal; elsewhere only the final line is written."""

    def __init__(self, label: str, total: int, flag: str = "failed",
                 stream: IO[str] | None = None) -> None:
        self.label = label
        self.flag = flag
        self.total = total
        self.done = 0
        self.failed = 0
        self.skipped = 0  # inputs not judged at all (bad lines), apart from the failed
        self._stream = stream or sys.stderr
        self._live = self._stream.isatty()
        self._started = time.monotonic()
        self._drawn = 0.0

    def advance(self, failed: bool = False, skipped: bool = False) -> None:
        self.done += 1
        self.failed += failed
        self.skipped += skipped
        now = time.monotonic()
        if self._live and (now - self._drawn >= 0.2 or self.done == self.total):
            self._drawn = now
            self._stream.write("\r" + self._line())
            self._stream.flush()

    def close(self) -> None:
        self._stream.write(("\r" if self._live else "") + self._line() + "\n")
        self._stream.flush()

    def _line(self) -> str:
        elapsed = max(1e-9, time.monotonic() - self._started)
        skipped = f"{self.skipped} skipped, " if self.skipped else ""
        return (f"{self.label} {self.done}/{self.total} "
                f"({skipped}{self.failed} {self.flag}) {self.done / elapsed:.1f}/s")
