"""glibc's mmap threshold is fixed by the local judge's load and by the gateway, unless
the environment says otherwise; each probe runs in a child process, so the test
session's allocator is left as it is."""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")

_PROBE = ("from ragas_trace.allocator import return_large_buffers; "
          "print(return_large_buffers())")
_BENCH = Path(__file__).resolve().parents[1] / "bench" / "allocator_threshold.py"
_ENV = {k: v for k, v in os.environ.items()
        if k not in ("MALLOC_MMAP_THRESHOLD_", "RAGAS_TRACE_MMAP_THRESHOLD", "GLIBC_TUNABLES")}


def _probe(**env: str) -> tuple[str, str]:
    done = subprocess.run([sys.executable, "-c", _PROBE], env={**_ENV, **env},
                          capture_output=True, text=True, check=True)
    return done.stdout.strip(), done.stderr


def _arena_ceiling_kib(**env: str) -> int:
    """The largest block glibc serves from its arenas once the local judge has loaded
    (bench/allocator_threshold.py's probe, in a fresh process)."""
    done = subprocess.run([sys.executable, str(_BENCH), "--step", "local_judge"],
                          env={**_ENV, **env}, capture_output=True, text=True, check=True,
                          timeout=120)
    return int(json.loads(done.stdout)["arena_ceiling_kib"])


def test_the_threshold_is_set_unless_the_environment_says_not_to() -> None:
    assert _probe()[0] == "True"
    assert _probe(MALLOC_MMAP_THRESHOLD_=str(1 << 21))[0] == "False"
    assert _probe(GLIBC_TUNABLES="glibc.malloc.mmap_threshold=2097152")[0] == "False"
    assert _probe(RAGAS_TRACE_MMAP_THRESHOLD="0")[0] == "False"
    assert _probe(RAGAS_TRACE_MMAP_THRESHOLD=str(1 << 22))[0] == "True"


def test_a_bad_setting_is_named_and_the_default_used() -> None:
    out, err = _probe(RAGAS_TRACE_MMAP_THRESHOLD="1MiB")
    assert out == "True"
    assert "RAGAS_TRACE_MMAP_THRESHOLD='1MiB'" in err


def test_loading_the_local_judge_leaves_large_blocks_to_mmap() -> None:
    pytest.importorskip("onnxruntime")
    # glibc alone: what the model's load frees raises the threshold past 4 MiB.
    assert _arena_ceiling_kib(RAGAS_TRACE_MMAP_THRESHOLD="0") >= 4096
    assert _arena_ceiling_kib() < 1024
