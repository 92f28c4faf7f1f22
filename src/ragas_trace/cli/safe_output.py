"""Writing a command's output file without ever destroying data: never onto its own
input, and atomically (a temporary file in the same directory, then ``os.replace``),
so an interrupted or failed run leaves the previous output as it was."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: same path once symlinks and relative
    parts are resolved, or (both existing) the same inode, as for hard links."""
    with suppress(OSError):
        if a.exists() and b.exists() and os.path.samefile(a, b):
            return True
    return a.resolve() == b.resolve()


@contextmanager
def atomic_output(path: Path, keep_empty: bool = True) -> Iterator[IO[str]]:
    """A text stream that becomes ``path`` (the file a symlink points to, if it is
    one) only when the block ends without an exception (and, unless ``keep_empty``,
    something was written); the temporary file is removed otherwise. The file gets
    the mode it had, or the umask's default."""
    target = path.resolve()
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                     suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), _mode_for(target))
            yield out
            out.flush()
            os.fsync(out.fileno())
            written = out.tell() > 0
        if written or keep_empty:
            os.replace(temporary, target)
        else:
            os.unlink(temporary)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise


def _mode_for(target: Path) -> int:
    with suppress(OSError):
        return stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
