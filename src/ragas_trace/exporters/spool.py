"""``Spool``: what the exit path could not deliver within its deadline, kept on disk
for the next process that starts with the same directory, after the OpenTelemetry
Collector's persistent sending queue (file storage).

Files. Each exiting process writes one file per write, as a hidden temporary file
renamed into place (``spool-<pid>-<ns>-<entries>.jsonl``) once complete, so a
reader never sees half a file and workers of one server never write the same
file. A process claims each published file (at its start, then while it runs) by
renaming it to ``claimed-<its pid>-...`` (a rename succeeds for one process only),
reads it and deletes it; a claimed file whose claimer died unread is claimed again.

Entries are JSON objects, one a line, with a ``kind``: ``held`` (a RAG root span
and its descendants, not scored yet), ``span`` (a span that was waiting for export,
with the annotations waiting for it) or ``annotation`` (one annotation for one sink).

Held roots are kept with their content (question, passages, answer: the judge of
the next process reads them, and the content policy applies when they are
exported), so the files are the app user's only (mode 0600, directory 0700).

Bounds. The files together hold at most ``max_bytes`` and ``max_entries``; a write
takes what fits, in order, and returns how many it took. A full, unwritable or
corrupt spool is logged at WARNING (once per problem) and counted through
``on_event(kind, event, n)`` (``ragas_spool_total``: ``written``, ``claimed``,
``full``, ``unwritable``, ``corrupt``); it never raises."""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragas_trace._processes import alive

logger = logging.getLogger("ragas_trace")

Entry = dict[str, Any]
OnEvent = Callable[[str, str, int], None]
KINDS = ("held", "span", "annotation")
WRITTEN, CLAIMED, FULL, UNWRITABLE, CORRUPT = (
    "written", "claimed", "full", "unwritable", "corrupt")
DIRECTORY_NAME = "ragas-trace-spool"  # inside PROMETHEUS_MULTIPROC_DIR by default
_PUBLISHED = "spool-"
_CLAIMED = "claimed-"


class Spool:
    def __init__(self, directory: str, *, max_bytes: int, max_entries: int,
                 on_event: OnEvent | None = None) -> None:
        if max_bytes < 1 or max_entries < 1:
            raise ValueError("max_bytes and max_entries must be >= 1")
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_entries = max_entries
        self._on_event = on_event
        self._warned: set[str] = set()

    # -- writing (the exit path) -------------------------------------------------------

    def write(self, entries: Sequence[Entry]) -> int:
        """Write the first entries that fit; how many were written (the caller counts
        the rest as it would without a spool). Never raises."""
        if not entries:
            return 0
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            used_bytes, used_entries = self._usage()
        except OSError as exc:
            self._problem(UNWRITABLE, entries, f"{self.directory}: {exc.strerror or exc}")
            return 0
        lines: list[bytes] = []
        size = 0
        for entry in entries:
            try:
                line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False,
                                  allow_nan=False).encode("utf-8") + b"\n"
            except (TypeError, ValueError) as exc:  # ours: an entry that is not JSON
                self._problem(CORRUPT, [entry], f"entry not serialisable: {exc}")
                break
            if (used_bytes + size + len(line) > self.max_bytes
                    or used_entries + len(lines) + 1 > self.max_entries):
                break
            lines.append(line)
            size += len(line)
        taken = len(lines)
        if taken < len(entries):
            self._problem(FULL, entries[taken:],
                          f"{self.directory} holds its bound ({self.max_bytes} bytes, "
                          f"{self.max_entries} entries)")
        if not lines:
            return 0
        stamp = f"{os.getpid()}-{time.time_ns()}-{taken}.jsonl"
        temporary = os.path.join(self.directory, f".tmp-{stamp}")
        try:
            # Held roots carry the request's content (the judge reads it): the app's only.
            with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                           "wb") as out:
                out.writelines(lines)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, os.path.join(self.directory, _PUBLISHED + stamp))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            self._problem(UNWRITABLE, entries[:taken], f"{self.directory}: "
                          f"{exc.strerror or exc}")
            return 0
        self._count(entries[:taken], WRITTEN)
        logger.info("ragas-trace: %d entr(ies) not delivered by the exit deadline kept in "
                    "the spool %s for the next start", taken, self.directory)
        return taken

    def _usage(self) -> tuple[int, int]:
        """Bytes and entries of the files now in the spool (published or claimed)."""
        size = entries = 0
        for path in self._files(_PUBLISHED) + self._files(_CLAIMED):
            with contextlib.suppress(OSError):
                size += os.stat(path).st_size
                entries += _entries_in_name(path)
        return size, entries

    # -- claiming (any process: at its start, then while it runs) ----------------------

    def claim(self, max_files: int | None = None) -> list[Entry]:
        """The entries of the files no live process is reading (at most ``max_files``
        of them: workers starting together then share the work), each file taken by
        this process alone. Corrupt lines (and files over the byte bound) are
        counted and skipped. Never raises."""
        out: list[Entry] = []
        if not os.path.isdir(self.directory):
            return out
        mine = os.getpid()
        candidates = self._files(_PUBLISHED) + [
            path for path in self._files(_CLAIMED)
            if _claimer(path) != mine and not alive(_claimer(path))]  # claimer died unread
        for path in sorted(candidates):
            base = os.path.basename(path)
            if base.startswith(_CLAIMED):
                base = base.split("-", 2)[2]
            target = os.path.join(self.directory, f"{_CLAIMED}{mine}-{base}")
            try:
                os.rename(path, target)
            except OSError:
                continue  # another process claimed it first
            out.extend(self._read(target))
            max_files = None if max_files is None else max_files - 1
            if max_files == 0:
                break
        if out:
            logger.info("ragas-trace: %d entr(ies) from the spool %s (left by a process "
                        "that exited) are being delivered", len(out), self.directory)
        return out

    def _read(self, path: str) -> list[Entry]:
        entries: list[Entry] = []
        corrupt = 0
        try:
            if os.stat(path).st_size > self.max_bytes:
                raise ValueError(f"larger than the bound of {self.max_bytes} bytes")
            with open(path, "rb") as source:
                for line in source:
                    entry = _entry(line)
                    if entry is None:
                        corrupt += 1
                    else:
                        entries.append(entry)
        except (OSError, ValueError) as exc:
            self._warn(CORRUPT, f"ragas-trace: spool file {path} unreadable ({exc}); "
                                "skipped (counted in ragas_spool_total)")
            self._emit("held", CORRUPT, max(1, _entries_in_name(path) - len(entries)))
            entries = []
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
        if corrupt:
            self._warn(CORRUPT, f"ragas-trace: {corrupt} corrupt line(s) in spool file "
                                f"{path} skipped (counted in ragas_spool_total)")
            self._emit("held", CORRUPT, corrupt)
        self._count(entries, CLAIMED)
        return entries

    # -- internals ----------------------------------------------------------------------

    def _files(self, prefix: str) -> list[str]:
        return glob.glob(os.path.join(glob.escape(self.directory), prefix + "*.jsonl"))

    def _problem(self, event: str, entries: Sequence[Entry], why: str) -> None:
        self._warn(event, f"ragas-trace: spool {event}: {len(entries)} entr(ies) not kept "
                          f"({why}); counted in ragas_spool_total and as lost")
        self._count(entries, event)

    def _warn(self, event: str, message: str) -> None:
        if event not in self._warned:
            self._warned.add(event)
            logger.warning(message + " (logged once)")

    def _count(self, entries: Sequence[Entry], event: str) -> None:
        by_kind: dict[str, int] = {}
        for entry in entries:
            kind = entry.get("kind") if isinstance(entry, Mapping) else None
            key = kind if kind in KINDS else "held"
            by_kind[key] = by_kind.get(key, 0) + 1
        for kind, n in by_kind.items():
            self._emit(kind, event, n)

    def _emit(self, kind: str, event: str, n: int) -> None:
        if self._on_event is None or n <= 0:
            return
        try:
            self._on_event(kind, event, n)
        except Exception as exc:  # a metric is not worth the spool
            logger.warning("ragas-trace: counting spool entries failed: %s", exc)


def _entry(line: bytes) -> Entry | None:
    try:
        entry = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or entry.get("kind") not in KINDS:
        return None
    return entry


def _entries_in_name(path: str) -> int:
    """The entry count written into the file's name."""
    count = os.path.basename(path).removesuffix(".jsonl").rsplit("-", 1)[-1]
    return int(count) if count.isdigit() else 0


def _claimer(path: str) -> int:
    pid = os.path.basename(path).split("-", 2)[1]
    return int(pid) if pid.isdigit() else 0

