"""Hostile judge endpoints (issue 24 rows 1, 2, 12) through the loopback server and
the real ``openai`` client: a reply is bounded in bytes, no credential leaves in a
reason or a log line, and usage or embeddings that are not numbers are refused."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.judges.prompts import Task
from ragas_trace.results import Metric, MetricStatus, Scores
from ragas_trace.testing.openai_server import STREAM_CAP_BYTES, FakeOpenAIServer, Fault

QUESTION = "When was the Eiffel Tower built?"
CONTEXT = "The Eiffel Tower is in Paris. The Eiffel Tower was built from 1887 to 1889."
ANSWER = "The Eiffel Tower was built from 1887 to 1889."
KEY = "sk-proj-Zq8vR2mK7tX4wL9nB3cF6hJ1sD5gA0eYuIoP"
MIB = 1024 * 1024


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


async def _evaluate(server: FakeOpenAIServer, **kw: object) -> Scores:
    options: dict[str, object] = {"max_retries": 1, "timeout_s": 20.0, "api_key": KEY}
    options.update(kw)
    judge = OpenAIJudge(model="m", base_url=server.base_url,
                        **options)  # type: ignore[arg-type]
    try:
        return await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    finally:
        await judge.aclose()


def _peak_rss_reset() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


@pytest.mark.parametrize("fault", [Fault.ENDLESS_BODY, Fault.HUGE_LENGTH])
async def test_an_endless_reply_is_cut_at_the_byte_limit(server: FakeOpenAIServer,
                                                          fault: Fault) -> None:
    if not _peak_rss_reset():
        pytest.skip("cannot reset the peak RSS here")
    before = _peak_rss_bytes()
    server.inject(fault, times=None, task=Task.STATEMENTS)
    s = await _evaluate(server)  # the default limit, 4 MiB
    growth = _peak_rss_bytes() - before
    sent = server.stats().streamed_bytes
    # Memory: the old client buffered the whole stream (STREAM_CAP_BYTES, 512 MiB).
    assert growth < 64 * MIB, (growth, sent)
    result = s.result(Metric.FAITHFULNESS)
    assert result.status is MetricStatus.FAILED
    assert result.reason == f"statement extraction: judge reply over {4 * MIB} bytes"
    # Not retried (the same endpoint would send the same), and the client hung up
    # near the limit: what the server got out is the limit plus the socket buffers.
    assert server.stats().by_task[Task.STATEMENTS] == 1
    assert sent < STREAM_CAP_BYTES / 8


async def test_the_byte_limit_leaves_normal_replies_alone(server: FakeOpenAIServer) -> None:
    s = await _evaluate(server, max_reply_bytes=64 * 1024)
    assert all(s.result(m).status is MetricStatus.SCORED for m in Metric)


async def test_the_byte_limit_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGAS_TRACE_JUDGE_MAX_REPLY_BYTES", "2048")
    assert OpenAIJudge(base_url="http://127.0.0.1:1/v1").max_reply_bytes == 2048
    assert OpenAIJudge(base_url="http://127.0.0.1:1/v1",
                       max_reply_bytes=4096).max_reply_bytes == 4096
    monkeypatch.delenv("RAGAS_TRACE_JUDGE_MAX_REPLY_BYTES")
    assert OpenAIJudge(base_url="http://127.0.0.1:1/v1").max_reply_bytes == 4 * MIB


def _masked_forms(key: str) -> list[str]:
    return [key, key[:8], key[-8:], key[4:-4]]


@pytest.mark.parametrize(("fault", "status", "reason"), [
    (Fault.ECHO_HEADERS, 401, "judge HTTP 401"),
    (Fault.ECHO_HEADERS, 429, "judge HTTP 429 (after 2 attempts)"),
    (Fault.ECHO_HEADERS, 500, "judge HTTP 500 (after 2 attempts)"),
    (Fault.ECHO_HEADERS, 400, "judge HTTP 400"),
    (Fault.UNAUTHORIZED, 401, "judge HTTP 401"),
])
async def test_error_text_quoting_the_key_never_reaches_reasons_or_logs(
        server: FakeOpenAIServer, caplog: pytest.LogCaptureFixture, fault: Fault, status: int,
        reason: str) -> None:
    server.inject(fault, times=None, status=status, retry_after_s=0.01)
    with caplog.at_level(logging.DEBUG):
        s = await _evaluate(server)
    for metric in Metric:
        result = s.result(metric)
        assert result.status is MetricStatus.FAILED
        assert result.reason is not None and result.reason.endswith(": " + reason)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "[masked]" in logged  # the endpoint's text was logged, masked
    for secret in _masked_forms(KEY):
        assert secret not in logged
    if fault is Fault.UNAUTHORIZED:  # OpenAI's own form of the key: first and last 4
        assert f"{KEY[:4]}****" not in logged and f"****{KEY[-4:]}" not in logged


async def test_usage_that_is_not_a_count_is_ignored_and_counted(
        server: FakeOpenAIServer) -> None:
    for bad in (float("nan"), float("inf"), -2_999_950, "many", 1e30, [1]):
        server.clear_faults()
        server.inject(Fault.BAD_USAGE, times=None, usage=bad)
        s = await _evaluate(server)
        assert all(s.result(m).status is MetricStatus.SCORED for m in Metric), (bad, s)
        assert (s.usage.prompt_tokens, s.usage.completion_tokens) == (0, 0), bad
        assert s.usage.invalid_usage == 4, bad  # 3 chat replies and 1 embeddings reply


async def test_overflowing_embeddings_fail_answer_relevance(server: FakeOpenAIServer) -> None:
    server.inject(Fault.HUGE_EMBEDDINGS, times=None)
    s = await _evaluate(server)
    result = s.result(Metric.ANSWER_RELEVANCE)
    assert result.status is MetricStatus.FAILED and result.value is None
    assert result.reason == "embedding: values too large"
    assert s.result(Metric.FAITHFULNESS).status is MetricStatus.SCORED



async def test_a_compressed_reply_is_refused(server: FakeOpenAIServer) -> None:
    """The byte limit counts wire bytes: a gzip bomb would pass it, so the client asks
    for identity and refuses what is compressed anyway."""
    server.inject(Fault.GZIPPED, times=None, task=Task.STATEMENTS)
    s = await _evaluate(server)
    assert s.result(Metric.FAITHFULNESS).reason == "statement extraction: judge reply compressed"
    (request, *_) = [r for r in server.recorded() if r.task is Task.STATEMENTS]
    assert request.fault is Fault.GZIPPED
