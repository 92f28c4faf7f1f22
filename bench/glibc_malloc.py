"""glibc's ``mallinfo2``, for the benches that tell native memory in use from free
memory the allocator keeps (bench/soak.py, bench/allocator_threshold.py)."""

from __future__ import annotations

import ctypes


class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def mallinfo2() -> Mallinfo2 | None:
    """glibc's counts over all its arenas now; ``None`` where there is no glibc 2.33+."""
    try:
        call = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    call.restype = Mallinfo2
    info: Mallinfo2 = call()
    return info
