"""Large buffers go back to the operating system when freed (glibc).

glibc serves a block of at least its mmap threshold with an ``mmap`` of its own, unmapped
when freed; smaller blocks come from the malloc arenas, which keep what is freed (an
arena's top is trimmed only past twice the threshold). The threshold starts at 128 KiB
and rises to the size of every larger mmapped block freed, up to 32 MiB.

Loading the local judge (its tokenizer, then its onnxruntime session) frees blocks of
several MiB: it left the threshold between 8 and 16 MiB, where an app's own 1 MB
request leaves it under 1 MiB (bench/allocator_threshold.py). From then on, the app's
blocks of up to 8 MiB came from the arenas and stayed there: in hour-long soaks an
app taking 1 MB requests grew its RSS by 2 to 5 MiB/h more than the same app without
ragas-trace, its Python heap flat; with the threshold fixed at 1 MiB, by -4 to 3
(bench/soak.py). A gateway fed 3-5 MiB OTLP bodies grew by about 160 MiB over 120 of
them with the threshold left to glibc.

So the local judge (before it loads its model) and ``ragas-trace serve`` fix the
threshold at 1 MiB. The operator's choice wins: with ``MALLOC_MMAP_THRESHOLD_``
(glibc's own setting, or its ``GLIBC_TUNABLES`` form) in the environment nothing is
changed, and ``RAGAS_TRACE_MMAP_THRESHOLD`` sets the size in bytes (``0``: leave
glibc's threshold as it is).
"""

from __future__ import annotations

import ctypes
import os
import sys

from ragas_trace._settings import Setting, integer, resolve

THRESHOLD_BYTES = 1 << 20
MAX_BYTES = 32 << 20  # the most glibc's mallopt takes on 64-bit
SETTING = Setting("mmap_threshold", "RAGAS_TRACE_MMAP_THRESHOLD", THRESHOLD_BYTES,
                  integer(0, MAX_BYTES), "glibc's mmap threshold in bytes; 0: glibc's own")
_GLIBC_ENV = "MALLOC_MMAP_THRESHOLD_"
_GLIBC_TUNABLE = "glibc.malloc.mmap_threshold"  # the same, set through GLIBC_TUNABLES
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def return_large_buffers() -> bool:
    """Fix glibc's mmap threshold (see the module's doc); whether it was set: ``False``
    where there is no glibc ``mallopt`` (macOS, musl) or the environment says not to."""
    threshold: int = resolve(SETTING, None, os.environ)
    chosen = (_GLIBC_ENV in os.environ
              or _GLIBC_TUNABLE in os.environ.get("GLIBC_TUNABLES", ""))
    if not sys.platform.startswith("linux") or chosen or not threshold:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))
