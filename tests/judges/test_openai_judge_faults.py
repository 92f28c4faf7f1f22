"""Failure paths of OpenAIJudge through the loopback server and the real ``openai``
client: every fault ends in a metric status with a reason, never in a made-up value."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.judges.prompts import Task
from ragas_trace.results import Metric, MetricStatus, Scores
from ragas_trace.testing.fake_judge import default_reply
from ragas_trace.testing.openai_server import CHAT_PATH, EMBEDDINGS_PATH, FakeOpenAIServer, Fault

QUESTION = "When was the Eiffel Tower built?"
CONTEXT = "The Eiffel Tower is in Paris. The Eiffel Tower was built from 1887 to 1889."
ANSWER = "The Eiffel Tower was built from 1887 to 1889."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


async def _evaluate(server: FakeOpenAIServer, **kw: object) -> Scores:
    options: dict[str, object] = {"max_retries": 2, "timeout_s": 5.0}
    options.update(kw)
    judge = OpenAIJudge(model="m", base_url=server.base_url, api_key="test",
                        **options)  # type: ignore[arg-type]
    try:
        return await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    finally:
        await judge.aclose()


def _failed(s: Scores, metric: Metric, status: MetricStatus = MetricStatus.FAILED) -> str:
    result = s.result(metric)
    assert result.status is status, result
    assert result.value is None
    assert result.reason
    return result.reason


def _all_scored_except(s: Scores, *failed: Metric) -> None:
    for metric in Metric:
        if metric not in failed:
            assert s.result(metric).status is MetricStatus.SCORED, (metric, s.result(metric))


async def test_transient_500_is_retried(server: FakeOpenAIServer) -> None:
    server.inject(Fault.SERVER_ERROR, times=2, task=Task.GROUNDING)
    s = await _evaluate(server, max_retries=2)
    _all_scored_except(s)
    assert s.faithfulness == 1.0
    assert server.stats().by_task[Task.GROUNDING] == 3
    assert s.usage.chat_calls == 3  # logical calls; retries are not extra calls


async def test_persistent_500_fails_with_reason(server: FakeOpenAIServer) -> None:
    server.inject(Fault.SERVER_ERROR, times=None, task=Task.STATEMENTS)
    s = await _evaluate(server, max_retries=1)
    reason = _failed(s, Metric.FAITHFULNESS)
    assert "statement extraction" in reason and "HTTP 500" in reason and "2 attempts" in reason
    _all_scored_except(s, Metric.FAITHFULNESS)


async def test_429_with_retry_after_is_honoured(server: FakeOpenAIServer) -> None:
    server.inject(Fault.RATE_LIMIT, times=1, task=Task.QUESTIONS, retry_after_s=0.05)
    s = await _evaluate(server)
    _all_scored_except(s)
    assert server.stats().by_task[Task.QUESTIONS] == 2


async def test_429_asking_longer_than_the_budget_gives_up_at_once(
        server: FakeOpenAIServer) -> None:
    server.inject(Fault.RATE_LIMIT, times=None, task=Task.GROUNDING, retry_after_s=3600)
    s = await _evaluate(server, total_timeout_s=30)
    for metric in (Metric.CONTEXT_RELEVANCE, Metric.FAITHFULNESS):
        reason = _failed(s, metric)
        assert "HTTP 429" in reason and "no time left" in reason
    assert server.stats().by_task[Task.GROUNDING] == 1
    _all_scored_except(s, Metric.CONTEXT_RELEVANCE, Metric.FAITHFULNESS)


async def test_hang_is_a_timeout(server: FakeOpenAIServer) -> None:
    server.inject(Fault.HANG, task=Task.GROUNDING)
    s = await _evaluate(server, timeout_s=0.3, max_retries=0)
    reason = _failed(s, Metric.FAITHFULNESS, MetricStatus.TIMEOUT)
    assert "statement verification" in reason
    _failed(s, Metric.CONTEXT_RELEVANCE, MetricStatus.TIMEOUT)
    _all_scored_except(s, Metric.FAITHFULNESS, Metric.CONTEXT_RELEVANCE)


async def test_total_budget_bounds_retries_of_hangs(server: FakeOpenAIServer) -> None:
    server.inject(Fault.HANG, times=None, path=EMBEDDINGS_PATH)
    s = await _evaluate(server, timeout_s=0.2, max_retries=20, total_timeout_s=1.0)
    _failed(s, Metric.ANSWER_RELEVANCE, MetricStatus.TIMEOUT)
    _all_scored_except(s, Metric.ANSWER_RELEVANCE)
    assert server.stats().embedding_requests < 10


async def test_invalid_json_fails_the_metric(server: FakeOpenAIServer) -> None:
    server.inject(Fault.INVALID_JSON, task=Task.STATEMENTS)
    s = await _evaluate(server)
    reason = _failed(s, Metric.FAITHFULNESS)
    assert "statement extraction" in reason and "not a JSON object" in reason
    assert s.statements == ()
    _all_scored_except(s, Metric.FAITHFULNESS)


async def test_invalid_json_verdicts_are_never_counted_as_supported(
        server: FakeOpenAIServer) -> None:
    server.inject(Fault.INVALID_JSON, task=Task.GROUNDING)
    s = await _evaluate(server)
    _failed(s, Metric.FAITHFULNESS)
    _failed(s, Metric.CONTEXT_RELEVANCE)


async def test_truncated_reply_fails_the_metric(server: FakeOpenAIServer) -> None:
    server.inject(Fault.TRUNCATED, task=Task.GROUNDING)
    s = await _evaluate(server)
    assert "truncated" in _failed(s, Metric.CONTEXT_RELEVANCE)
    assert "truncated" in _failed(s, Metric.FAITHFULNESS)
    assert s.kept_sentences == () and s.statements == ()
    _all_scored_except(s, Metric.CONTEXT_RELEVANCE, Metric.FAITHFULNESS)


async def test_dropped_connection_is_retried(server: FakeOpenAIServer) -> None:
    server.inject(Fault.DISCONNECT, task=Task.QUESTIONS)
    s = await _evaluate(server)
    _all_scored_except(s)


async def test_connection_refused_fails_every_metric() -> None:
    server = FakeOpenAIServer().start()
    server.stop()
    s = await _evaluate(server, max_retries=1)
    for metric in Metric:
        assert _failed(s, metric).endswith("judge unreachable (after 2 attempts)")
    assert s.usage.prompt_tokens == 0


async def test_schema_refused_falls_back_to_json_object(server: FakeOpenAIServer) -> None:
    server.inject(Fault.SCHEMA_UNSUPPORTED, times=None)
    judge = OpenAIJudge(model="m", base_url=server.base_url, api_key="test")
    s = await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    await judge.aclose()
    _all_scored_except(s)
    assert judge.response_format == "json_object"
    last = server.recorded()[-1].body
    assert last.get("response_format") in ({"type": "json_object"}, None)


async def test_missing_verdicts_fail_instead_of_guessing(server: FakeOpenAIServer) -> None:
    server.set_reply(Task.STATEMENTS, lambda r: {"statements": ["A.", "B."]})
    server.set_reply(Task.GROUNDING, lambda r: {"sentences": [2], "verdicts": [
        {"id": 1, "reason": "ok", "supported": True}]})
    s = await _evaluate(server)
    assert "1 verdicts for 2 statements" in _failed(s, Metric.FAITHFULNESS)
    _all_scored_except(s, Metric.FAITHFULNESS)  # the selection part of the reply stands


async def test_unreadable_verdict_value_fails(server: FakeOpenAIServer) -> None:
    server.set_reply(Task.GROUNDING, lambda r: {"sentences": [2], "verdicts": [
        {"id": 1, "reason": "hmm", "supported": "maybe"}]})
    s = await _evaluate(server)
    assert "yes/no" in _failed(s, Metric.FAITHFULNESS)


async def test_prose_around_json_and_yes_no_verdicts_are_accepted(
        server: FakeOpenAIServer) -> None:
    server.set_reply(Task.GROUNDING, lambda r: 'Here you go:\n```json\n{"sentences": ["2"], '
                     '"verdicts": [{"id": 1, "reason": "stated", "verdict": "Yes"}]}\n```')
    s = await _evaluate(server)
    assert s.faithfulness == 1.0


async def test_invented_context_sentences_fail(server: FakeOpenAIServer) -> None:
    server.set_reply(Task.GROUNDING, lambda r: {**default_reply(r),
                                                "sentences": ["The tower is made of cheese.", 9]})
    s = await _evaluate(server)
    assert "selected is in the context" in _failed(s, Metric.CONTEXT_RELEVANCE)
    _all_scored_except(s, Metric.CONTEXT_RELEVANCE)


async def test_embedding_errors_fail_answer_relevance(server: FakeOpenAIServer) -> None:
    server.inject(Fault.SERVER_ERROR, times=None, path=EMBEDDINGS_PATH)
    s = await _evaluate(server, max_retries=0)
    assert "embedding" in _failed(s, Metric.ANSWER_RELEVANCE)
    _all_scored_except(s, Metric.ANSWER_RELEVANCE)


@pytest.mark.parametrize("parameter", ["max_tokens", "temperature"])
async def test_refused_parameters_are_adapted_once(server: FakeOpenAIServer,
                                                   parameter: str) -> None:
    server.inject(Fault.UNSUPPORTED_PARAMETER, times=None, parameter=parameter)
    judge = OpenAIJudge(model="m", base_url=server.base_url, api_key="test", max_retries=0)
    first = await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    refused = server.stats().faults[Fault.UNSUPPORTED_PARAMETER]
    second = await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    await judge.aclose()
    _all_scored_except(first)
    _all_scored_except(second)
    assert 1 <= refused <= 3  # the round-one calls may all be refused before adapting
    assert server.stats().faults[Fault.UNSUPPORTED_PARAMETER] == refused
    assert all(parameter not in r.body for r in server.recorded() if r.fault is None)
    if parameter == "max_tokens":
        assert all("max_completion_tokens" in r.body for r in server.recorded()
                   if r.fault is None and r.task is not None)


async def test_other_bad_requests_fail_without_retry(server: FakeOpenAIServer) -> None:
    server.inject(Fault.UNSUPPORTED_PARAMETER, times=None, parameter="messages")
    s = await _evaluate(server)
    assert "HTTP 400" in _failed(s, Metric.FAITHFULNESS)
    assert server.stats().chat_requests == 3


@pytest.mark.parametrize("path", [CHAT_PATH, EMBEDDINGS_PATH])
async def test_http_200_garbage_is_a_judge_failure_with_a_fixed_reason(
        server: FakeOpenAIServer, path: str) -> None:
    server.inject(Fault.GARBAGE, times=None, path=path)
    first = await _evaluate(server, max_retries=1)
    second = await _evaluate(server, max_retries=1)
    failed = [m for m in Metric if first.result(m).status is MetricStatus.FAILED]
    assert failed == (list(Metric) if path == CHAT_PATH else [Metric.ANSWER_RELEVANCE])
    for metric in failed:
        reason = _failed(first, metric)
        assert "not valid JSON" in reason and "internal error" not in reason
        assert reason == second.result(metric).reason  # one label value, whatever the record


@pytest.mark.parametrize(("fault", "why"), [
    (Fault.ZERO_EMBEDDINGS, "all-zero vectors"),
    (Fault.NAN_EMBEDDINGS, "non-finite values"),
])
async def test_degenerate_embeddings_fail_answer_relevance(
        server: FakeOpenAIServer, fault: Fault, why: str) -> None:
    server.inject(fault, times=None, path=EMBEDDINGS_PATH)
    s = await _evaluate(server)
    assert _failed(s, Metric.ANSWER_RELEVANCE) == f"embedding: {why}"
    assert s.answer_relevance is None  # never 0.0 "scored"
    _all_scored_except(s, Metric.ANSWER_RELEVANCE)


async def test_embeddings_that_change_dimension_fail(server: FakeOpenAIServer) -> None:
    judge = OpenAIJudge(model="m", base_url=server.base_url, api_key="test")
    before = await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    server.inject(Fault.SHORT_EMBEDDINGS, times=None, path=EMBEDDINGS_PATH)
    after = await judge.evaluate(QUESTION, [CONTEXT], ANSWER)
    await judge.aclose()
    assert before.result(Metric.ANSWER_RELEVANCE).status is MetricStatus.SCORED
    assert _failed(after, Metric.ANSWER_RELEVANCE) == "embedding: the vectors' dimension changed"
