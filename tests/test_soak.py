"""The short soak (issue 30): bench/soak.py for 3 minutes, every phase of the full run
scaled down (warm-up, steady, a judge that answers slowly and then 429 with
Retry-After, recovery), with the full run's invariants: every request accounted for
from the /metrics endpoints (per request and per metric), no internal error counted
there, nothing held at the end, and no growth beyond the stated
bounds from the end of warm-up to the end. No timing is asserted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MINUTES = 3


@pytest.mark.slow
def test_a_short_soak_stays_flat_and_accounts_for_every_request(tmp_path: Path) -> None:
    report_path = tmp_path / "soak.json"
    # The soak measures what production does: internal errors counted, not raised.
    env = {k: v for k, v in os.environ.items() if k != "RAGAS_TRACE_RAISE_INTERNAL_ERRORS"}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--minutes", str(MINUTES),
         "--no-write", "--report", str(report_path)],
        env=env, capture_output=True, text=True, timeout=MINUTES * 60 + 600)
    assert report_path.exists(), proc.stderr[-4000:]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["failures"] == [], report["failures"]
    assert proc.returncode == 0, proc.stderr[-4000:]

    accounting = report["accounting"]
    # The app as users run it, the same app with glibc's mmap threshold fixed, the gateway.
    assert set(accounting) == {"app_local", "app_llm", "app_glibc.app_local",
                               "app_glibc.app_llm", "gateway"}
    for name, acc in accounting.items():
        assert acc["requests_in"] > 0
        assert acc["unaccounted"] == 0, (name, acc)
        statuses = acc["by_status"]
        assert statuses.get("scored", 0) > 0 and statuses.get("not_sampled", 0) > 0, statuses
        assert acc["dropped_matches_reasons"], acc
        # Per metric, read back from ragas_metric_evaluations_total: every request once.
        assert set(acc["per_metric"]) == {"faithfulness", "answer_relevance",
                                          "context_relevance"}
        for metric, counts in acc["per_metric"].items():
            assert counts["unaccounted"] == 0, (name, metric, counts)
            assert sum(counts["by_status"].values()) == acc["requests_in"], (name, metric)
            assert counts["by_status"].get("not_sampled", 0) == statuses["not_sampled"]
            assert counts["scored_matches_histogram"], (name, metric, counts)
        assert acc["internal_errors"] == {}, (name, acc["internal_errors"])
    for name in set(accounting) - {"gateway"}:
        sent = accounting[name]["sent"]
        assert {"ordinary", "huge", "malformed:retriever", "malformed:model",
                "malformed:empty", "malformed:text"} <= set(sent), sent
    gateway = accounting["gateway"]
    assert gateway["refused_sent"] == gateway["refused_counted"] > 0
    assert gateway["otlp_requests"].get("huge", 0) > 0
    assert gateway["otlp_requests"].get("huge_refused", 0) > 0
    # The slow phase ran: the judge answered 429s, the LLM judge's pipeline held spans.
    assert report["judge_until_recovery"]["rate_limited"] > 0
    assert report["idle_at_end"]
    for pipeline in report["summary"]["pipelines"].values():
        assert pipeline["max_held_spans"] <= 1000  # max_held_spans, the default bound
    phases = {row["phase"] for row in report["samples"]}
    assert phases == {"warm_up", "steady", "slow_judge", "recovery"}
