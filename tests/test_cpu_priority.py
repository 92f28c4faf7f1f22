"""``lower_to_idle``: every thread, those started before it (numpy's) and after it, runs at
idle priority. Run in a child process: the test runner's own priority stays."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux SCHED_IDLE")

_CHILD = """
import json, os, threading
import numpy  # its BLAS pool starts threads at import, before the call
from ragas_trace.cpu_priority import lower_to_idle
done = lower_to_idle()
started = threading.Event(); stop = threading.Event()
def run():
    started.set(); stop.wait(10)
t = threading.Thread(target=run); t.start(); started.wait(10)
policies = {tid: os.sched_getscheduler(int(tid)) for tid in os.listdir("/proc/self/task")}
stop.set(); t.join()
print(json.dumps({"done": done, "policies": policies, "nice": os.nice(0)}))
"""


def test_the_calling_thread_and_later_threads_run_at_sched_idle() -> None:
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    report = json.loads(out)
    assert report["done"] == "idle"
    assert len(report["policies"]) >= 2  # numpy's, the main thread, the one it started
    assert set(report["policies"].values()) == {os.SCHED_IDLE}
    assert report["nice"] == 19
