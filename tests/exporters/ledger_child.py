"""A process recording the scorer's metrics into PROMETHEUS_MULTIPROC_DIR (set by the
test before Python starts), for tests/exporters/test_lost_requests.py.

    ledger_child.py kill N     N requests, half not sampled, the rest held by a judge
                               that never answers; prints the held count, then SIGKILL
    ledger_child.py spool N    the same held requests, then the exit path's shutdown
                               into the spool (SPOOL_DIR); exits normally
    ledger_child.py replay     takes over the spool and scores what it holds
    ledger_child.py replay-kill  takes it over with a judge that never answers, four
                               roots held at once; SIGKILL before it is done
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from opentelemetry.sdk.trace import TracerProvider

from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.multiprocess_metrics import MultiprocessMeterProvider
from ragas_trace.exporters.processor import ScoringSpanProcessor
from ragas_trace.exporters.spool import Spool
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.sampler import Sampler
from ragas_trace.testing.rag_spans import rag_request
from ragas_trace.testing.scripted_judge import ScriptedJudge


def main(mode: str, n: int) -> None:
    metrics = ScorerMetrics(MultiprocessMeterProvider(), "svc")
    spool = Spool(os.environ["SPOOL_DIR"], max_bytes=1 << 24, max_entries=10_000,
                  on_event=metrics.spool)
    judge = ScriptedJudge(0.8) if mode == "replay" else ScriptedJudge(mode="hang")
    processor = ScoringSpanProcessor(None, BackgroundScorer(judge, timeout_s=60),
                                     sampler=Sampler(0.5), metrics=metrics, spool=spool)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    for _ in range(n):
        rag_request(provider.get_tracer("t"))
    if mode == "kill":
        print(processor.held_count, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "spool":
        print(processor.held_count, flush=True)
        processor.stop_scoring(0.1)
        processor.shutdown(2.0)
    if mode == "replay":
        print(processor.replay(spool.claim()), flush=True)
        processor.force_flush(10_000)
        processor.shutdown(2.0)
    if mode == "replay-kill":
        entries = spool.claim()
        replaying = threading.Thread(target=processor.replay, args=(entries, 4), daemon=True)
        replaying.start()
        while processor.held_count < 4:
            time.sleep(0.01)
        print(len(entries), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
