"""Large request buffers go back to the operating system when freed.

glibc serves a large allocation with its own ``mmap`` and unmaps it when freed, but it
raises that size threshold to the largest block freed so far (up to 32 MiB). After the
first multi-MiB OTLP request, the next ones come from the malloc arenas, one per
receiver thread, which keep the memory: a gateway's RSS grew by about 160 MiB over 120
requests of 3-5 MiB while its Python heap stayed flat (found by bench/soak.py); with the
threshold fixed at 1 MiB, such buffers stay mmapped and the same run stayed flat. Only
``ragas-trace serve`` calls this: the gateway owns its process; the library never
changes the allocator of the app it runs in.
"""

from __future__ import annotations

import ctypes
import os
import sys

THRESHOLD_BYTES = 1 << 20
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h
_ENV = "MALLOC_MMAP_THRESHOLD_"  # glibc's own setting: the operator's choice wins


def return_large_buffers(threshold: int = THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes; ``False`` where there is no
    glibc ``mallopt`` (macOS, musl) or the environment already sets it."""
    if not sys.platform.startswith("linux") or _ENV in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
