"""The gateway fixes glibc's mmap threshold, unless the environment already does; in a
child process, so the test session's allocator is left as it is."""

import os
import platform
import subprocess
import sys

import pytest

_PROBE = ("from ragas_trace.gateway.allocator import return_large_buffers; "
          "print(return_large_buffers())")


def _probe(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only (mallopt)")
def test_the_threshold_is_set_on_glibc_unless_the_environment_sets_it() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    assert _probe(env) == "True"
    assert _probe({**env, "MALLOC_MMAP_THRESHOLD_": str(1 << 21)}) == "False"

