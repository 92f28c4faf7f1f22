"""OpenAIJudge against the loopback server through the real ``openai`` client:
every metric, the call budget, languages, caching and instrumentation suppression."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from opentelemetry import context as otel_context

from ragas_trace import ascore, score
from ragas_trace.judges import resolve_judge
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.judges.prompts import Task
from ragas_trace.results import Metric, MetricStatus
from ragas_trace.testing.fake_judge import TaskInput, default_reply
from ragas_trace.testing.openai_server import FakeOpenAIServer

QUESTION = "When was the Eiffel Tower built?"
CONTEXT = ("The Eiffel Tower is a wrought-iron tower in Paris. The Eiffel Tower was built "
           "from 1887 to 1889. Bananas are a popular fruit.")
GOOD = "The Eiffel Tower was built from 1887 to 1889. The Eiffel Tower is in Paris."
UNGROUNDED = "Napoleon ordered it in 1850 using gold. It is made of gold."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def _judge(server: FakeOpenAIServer, **kw: object) -> OpenAIJudge:
    return OpenAIJudge(model="judge-model", base_url=server.base_url, api_key="test",
                       **kw)  # type: ignore[arg-type]


async def test_good_answer_scores_every_metric_within_the_call_budget(
        server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate(QUESTION, [CONTEXT], GOOD)
    await judge.aclose()
    assert s.status == {"faithfulness": "scored", "answer_relevance": "scored",
                        "context_relevance": "scored"}
    assert s.faithfulness == 1.0
    assert s.context_relevance == pytest.approx(2 / 3)
    assert s.kept_sentences == ("The Eiffel Tower is a wrought-iron tower in Paris.",
                                "The Eiffel Tower was built from 1887 to 1889.")
    assert s.context_sentences == 3
    assert s.answer_relevance is not None and s.answer_relevance > 0.3
    assert [v.statement for v in s.statements] == [
        "The Eiffel Tower was built from 1887 to 1889.", "The Eiffel Tower is in Paris."]
    assert all(v.reason for v in s.statements)
    assert len(s.generated_questions) == 3
    assert s.judge == "openai:judge-model"
    stats = server.stats()
    assert (stats.chat_requests, stats.embedding_requests) == (3, 1)
    assert (s.usage.chat_calls, s.usage.embedding_calls, s.usage.rounds) == (3, 1, 2)
    assert s.usage.prompt_tokens == stats.prompt_tokens > 0
    assert s.usage.completion_tokens == stats.completion_tokens > 0
    assert sorted(stats.by_task) == sorted([Task.STATEMENTS, Task.QUESTIONS, Task.GROUNDING])
    # one copy of the context per record, numbered; sentences cited by number
    grounding = next(r for r in server.recorded() if r.task is Task.GROUNDING)
    prompt = grounding.body["messages"][-1]["content"]
    assert prompt.count("Bananas are a popular fruit.") == 1
    assert "[3] Bananas are a popular fruit." in prompt
    assert s.statements[0].reason.startswith("supported by [2] ")


async def test_context_relevance_alone_or_without_statements_is_one_call(
        server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    alone = await judge.evaluate(QUESTION, [CONTEXT], GOOD, frozenset({Metric.CONTEXT_RELEVANCE}))
    assert alone.usage.rounds == 1 and alone.usage.chat_calls == 1
    faith_only = await judge.evaluate(QUESTION, [CONTEXT], GOOD,
                                      frozenset({Metric.FAITHFULNESS}))
    await judge.aclose()
    assert alone.context_relevance == pytest.approx(2 / 3)
    assert faith_only.faithfulness == 1.0
    assert server.stats().by_task[Task.CONTEXT] == 1
    assert server.stats().by_task[Task.VERDICTS] == 1
    assert server.stats().by_task[Task.GROUNDING] == 0


async def test_round_one_calls_run_concurrently(server: FakeOpenAIServer) -> None:
    # Each round-one reply waits until both requests have arrived: if the judge
    # sent them one after another, the barrier would break and the metrics fail.
    barrier = threading.Barrier(2, timeout=10)

    def together(request: TaskInput) -> object:
        barrier.wait()
        return default_reply(request)

    for task in (Task.STATEMENTS, Task.QUESTIONS):
        server.set_reply(task, together)
    judge = _judge(server, max_retries=0)
    s = await judge.evaluate(QUESTION, [CONTEXT], GOOD)
    await judge.aclose()
    assert set(s.status.values()) == {MetricStatus.SCORED}
    assert s.usage.rounds == 2


async def test_ungrounded_answer_scores_lower_faithfulness(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate(QUESTION, [CONTEXT], UNGROUNDED)
    await judge.aclose()
    assert s.faithfulness is not None and s.faithfulness < 0.5
    assert any(not v.supported for v in s.statements)


async def test_refusal_gives_no_statements_and_zero_relevance(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate(QUESTION, [CONTEXT], "I don't know.")
    await judge.aclose()
    assert s.result(Metric.FAITHFULNESS).status is MetricStatus.NO_STATEMENTS
    assert s.faithfulness is None
    assert s.answer_relevance == 0.0  # noncommittal
    # no verification and no embeddings for an answer without statements; context
    # relevance still gets its selection call
    assert server.stats().by_task[Task.VERDICTS] == server.stats().by_task[Task.GROUNDING] == 0
    assert server.stats().by_task[Task.CONTEXT] == 1
    assert server.stats().embedding_requests == 0
    assert s.context_relevance is not None


async def test_insufficient_context_scores_zero(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate("Who painted the Mona Lisa?", ["Bananas are yellow."],
                             "Leonardo da Vinci.")
    await judge.aclose()
    assert s.context_relevance == 0.0 and s.kept_sentences == ()


async def test_missing_inputs_are_statuses_without_calls(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    no_answer = await judge.evaluate(QUESTION, [CONTEXT], "  ")
    no_context = await judge.evaluate(QUESTION, [], GOOD)
    no_question = await judge.evaluate(None, [CONTEXT], GOOD)
    await judge.aclose()
    assert no_answer.result(Metric.FAITHFULNESS).status is MetricStatus.NO_ANSWER
    assert no_answer.result(Metric.ANSWER_RELEVANCE).status is MetricStatus.NO_ANSWER
    assert no_answer.context_relevance is not None
    assert no_context.result(Metric.FAITHFULNESS).status is MetricStatus.NO_CONTEXT
    assert no_context.result(Metric.CONTEXT_RELEVANCE).status is MetricStatus.NO_CONTEXT
    assert no_question.result(Metric.ANSWER_RELEVANCE).status is MetricStatus.NO_QUESTION
    assert no_question.faithfulness == 1.0


async def test_only_requested_metrics_are_computed(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate(QUESTION, [CONTEXT], GOOD, frozenset({Metric.CONTEXT_RELEVANCE}))
    await judge.aclose()
    assert s.result(Metric.FAITHFULNESS).status is MetricStatus.SKIPPED
    assert s.context_relevance is not None
    assert server.stats().chat_requests == 1 and server.stats().embedding_requests == 0


async def test_chinese_answer_and_context(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate("埃菲尔铁塔是哪一年建成的？",
                             ["埃菲尔铁塔位于巴黎。埃菲尔铁塔于1889年建成。香蕉是黄色的。"],
                             "埃菲尔铁塔于1889年建成。它位于巴黎。")
    await judge.aclose()
    assert [v.statement for v in s.statements] == ["埃菲尔铁塔于1889年建成。", "它位于巴黎。"]
    assert s.faithfulness == 1.0
    assert s.context_sentences == 3
    assert s.context_relevance is not None and 0 < s.context_relevance < 1
    assert s.answer_relevance is not None and s.answer_relevance > 0


async def test_german_answer_and_context(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    s = await judge.evaluate(
        "Wann fiel die Berliner Mauer?",
        ["Die Berliner Mauer fiel am 9. November 1989. Das war z.B. für Familien wichtig. "
         "Bananen sind gelb."],
        "Die Berliner Mauer fiel am 9. November 1989. Danach kam die Einheit am 3. Oktober 1990.")
    await judge.aclose()
    assert [v.statement for v in s.statements] == [
        "Die Berliner Mauer fiel am 9. November 1989.",
        "Danach kam die Einheit am 3. Oktober 1990."]
    assert s.faithfulness == 0.5
    assert s.context_sentences == 3
    assert s.kept_sentences == ("Die Berliner Mauer fiel am 9. November 1989.",)


async def test_judge_copies_with_other_quotes_still_match(server: FakeOpenAIServer) -> None:
    # A judge that copies sentences out instead of giving their numbers is understood.
    server.set_reply(Task.CONTEXT, lambda r: {
        "sentences": ["“Paris,” he said,  is big", "Invented sentence."],
        "insufficient_information": False})
    judge = _judge(server)
    s = await judge.evaluate("What did he say?", ['"Paris," he said, is big. Rome is old.'], "x",
                             frozenset({Metric.CONTEXT_RELEVANCE}))
    await judge.aclose()
    assert s.context_relevance == 0.5
    assert s.kept_sentences == ('"Paris," he said, is big.',)


async def test_sentence_numbers_out_of_range_never_count(server: FakeOpenAIServer) -> None:
    server.set_reply(Task.CONTEXT, lambda r: {"sentences": [2, 2, "[1]", 7, 0],
                                              "insufficient_information": False})
    judge = _judge(server)
    s = await judge.evaluate(QUESTION, [CONTEXT], GOOD, frozenset({Metric.CONTEXT_RELEVANCE}))
    await judge.aclose()
    assert s.context_relevance == pytest.approx(2 / 3)
    assert s.kept_sentences == ("The Eiffel Tower is a wrought-iron tower in Paris.",
                                "The Eiffel Tower was built from 1887 to 1889.")


async def test_cache_avoids_paying_twice(server: FakeOpenAIServer) -> None:
    judge = _judge(server, cache=True)
    first = await judge.evaluate(QUESTION, [CONTEXT], GOOD)
    second = await judge.evaluate(QUESTION, [CONTEXT], GOOD)
    await judge.aclose()
    assert second.faithfulness == first.faithfulness
    assert second.answer_relevance == first.answer_relevance
    assert server.stats().chat_requests == 3 and server.stats().embedding_requests == 1
    assert second.usage.chat_calls == 0 and second.usage.prompt_tokens == 0


async def test_judge_calls_run_with_instrumentation_suppressed(server: FakeOpenAIServer) -> None:
    seen: list[object] = []

    def spy(request: TaskInput) -> dict[str, list[str]]:
        seen.append(request.task)
        return {"statements": []}

    server.set_reply(Task.STATEMENTS, spy)
    judge = _judge(server)
    original = judge.client

    def client_spy():  # type: ignore[no-untyped-def]
        seen.append(otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY))
        return original()

    judge.client = client_spy  # type: ignore[method-assign]
    await judge.evaluate(QUESTION, [CONTEXT], GOOD)
    await judge.aclose()
    assert Task.STATEMENTS in seen
    flags = [v for v in seen if not isinstance(v, Task)]
    assert flags and all(v is True for v in flags)
    assert otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY) is None


async def test_many_records_concurrently(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    results = await asyncio.gather(*(judge.evaluate(QUESTION, [CONTEXT], GOOD)
                                     for _ in range(10)))
    await judge.aclose()
    assert all(r.faithfulness == 1.0 for r in results)
    assert server.stats().chat_requests == 30


def test_sync_score_with_a_judge_object_across_loops(server: FakeOpenAIServer) -> None:
    judge = _judge(server)
    first = score(QUESTION, CONTEXT, GOOD, judge=judge)
    second = score(QUESTION, [CONTEXT], GOOD, judge=judge)  # a new loop, a new client
    assert first.faithfulness == second.faithfulness == 1.0


async def test_ascore_by_name_reads_the_environment(server: FakeOpenAIServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("RAGAS_TRACE_JUDGE_MODEL", "env-model")
    s = await ascore(QUESTION, [CONTEXT], GOOD, judge="openai", metrics=["faithfulness"])
    assert s.judge == "openai:env-model" and s.faithfulness == 1.0
    assert server.recorded()[0].body["model"] == "env-model"


def test_resolve_judge() -> None:
    judge = OpenAIJudge(base_url="http://127.0.0.1:9/v1")
    assert resolve_judge(judge) is judge
    with pytest.raises(ValueError, match="judge"):
        resolve_judge("gpt")
    with pytest.raises(ValueError, match="judge"):
        resolve_judge(42)  # type: ignore[arg-type]


def test_settings_validation(monkeypatch: pytest.MonkeyPatch,
                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="api_key"):
        OpenAIJudge()
    with pytest.raises(ValueError, match="timeout_s"):
        OpenAIJudge(base_url="http://127.0.0.1:9/v1", timeout_s=-1)
    with pytest.raises(ValueError, match="n_questions"):
        OpenAIJudge(base_url="http://127.0.0.1:9/v1", n_questions=0)
    monkeypatch.setenv("RAGAS_TRACE_JUDGE_MAX_RETRIES", "many")
    monkeypatch.setenv("RAGAS_TRACE_JUDGE_QUESTIONS", "5")
    judge = OpenAIJudge(base_url="http://127.0.0.1:9/v1")
    assert judge.max_retries == 3 and judge.n_questions == 5
    assert "RAGAS_TRACE_JUDGE_MAX_RETRIES" in caplog.text


@pytest.mark.parametrize(("cap", "expected"), [
    (0, {"statements": 1024, "questions": 512, "grounding": 4096}),
    (600, {"statements": 600, "questions": 512, "grounding": 600}),
])
async def test_max_reply_tokens_caps_each_request(
        server: FakeOpenAIServer, cap: int, expected: dict[str, int]) -> None:
    judge = _judge(server, max_reply_tokens=cap)
    await judge.evaluate(QUESTION, [CONTEXT], GOOD)
    await judge.aclose()
    sent = {r.task.value: r.body["max_tokens"] for r in server.recorded() if r.task is not None}
    assert sent == expected
