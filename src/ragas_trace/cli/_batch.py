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

T = TypeVar("T")


class InputError(ValueError):
    """A bad input line; the message names the file and line."""


def jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """(line number, object) for each non-blank line, or (line number, the
    ``InputError``) for a line that is not a JSON object; reading goes on after it."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as exc:
                yield number, InputError(f"{path}:{number}: not JSON ({exc})")
                continue
            if not isinstance(value, dict):
                yield number, InputError(f"{path}:{number}: expected a JSON object")
                continue
            yield number, value


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; ``InputError`` for a bad one."""
    for number, row in jsonl_rows(path):
        if isinstance(row, InputError):
            raise row
        yield number, row


def missing_text_fields(row: dict[str, Any], fields: Iterable[str]) -> list[str]:
    """The ``fields`` of ``row`` that are absent or not strings."""
    return [f for f in fields if not isinstance(row.get(f), str)]


positive_int = argument_type(integer(1))  # an argparse type: an integer of at least 1


def count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as lines:
        return sum(1 for line in lines if line.strip())


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
