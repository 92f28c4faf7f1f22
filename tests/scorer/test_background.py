from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from opentelemetry import context as otel_context

from ragas_trace.record import Context, RagRecord
from ragas_trace.results import ALL_METRICS, Scores
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.breaker import CircuitBreaker
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome
from ragas_trace.testing.scripted_judge import ScriptedJudge

RECORD = RagRecord("q?", (Context("c."),), "a.")


class Results:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.outcomes: list[Outcome] = []
        self.threads: set[str] = set()

    def __call__(self, record: RagRecord, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)
            self.threads.add(threading.current_thread().name)

    def statuses(self) -> list[str]:
        with self.lock:
            return sorted(str(o.status) for o in self.outcomes)


@pytest.fixture
def scorers() -> Iterator[list[BackgroundScorer]]:
    made: list[BackgroundScorer] = []
    yield made
    for scorer in made:
        scorer.shutdown(2.0)


def make(scorers: list[BackgroundScorer], judge: ScriptedJudge, **kw: object) -> BackgroundScorer:
    scorer = BackgroundScorer(judge, **kw)  # type: ignore[arg-type]
    scorers.append(scorer)
    return scorer


def test_scores_on_its_own_thread(scorers):
    results = Results()
    scorer = make(scorers, ScriptedJudge(0.8))
    assert scorer.submit(RECORD, results)
    assert scorer.drain(5.0)
    (outcome,) = results.outcomes
    assert outcome.status is EvaluationStatus.SCORED
    assert outcome.scores is not None and outcome.scores.faithfulness == 0.8
    assert results.threads == {"ragas-trace-scorer"}


def test_submit_does_not_wait_for_the_judge(scorers):
    gate = threading.Event()
    results = Results()
    scorer = make(scorers, ScriptedJudge(gate=gate), concurrency=2, queue_size=10)
    for _ in range(5):
        assert scorer.submit(RECORD, results)
    assert results.outcomes == []  # all five returned while the judge is held
    assert scorer.pending == 5
    gate.set()
    assert scorer.drain(5.0)
    assert results.statuses() == ["scored"] * 5


def test_concurrency_limit_and_bounded_queue(scorers):
    gate = threading.Event()
    judge = ScriptedJudge(gate=gate)
    results = Results()
    scorer = make(scorers, judge, concurrency=3, queue_size=4)
    accepted = [scorer.submit(RECORD, results) for _ in range(20)]
    assert scorer.drain(0.3) is False
    # three with the judge and four waiting; the first submits may all count as waiting
    # until the loop starts them, so at least queue_size and at most queue_size +
    # concurrency are accepted
    assert 4 <= sum(accepted) <= 7
    assert scorer.queued <= 4
    gate.set()
    assert scorer.drain(5.0)
    assert judge.max_in_flight <= 3
    assert len(results.outcomes) == sum(accepted)


def test_per_record_timeout(scorers):
    results = Results()
    scorer = make(scorers, ScriptedJudge(mode="hang"), timeout_s=0.1)
    scorer.submit(RECORD, results)
    assert scorer.drain(5.0)
    assert results.outcomes[0].status is EvaluationStatus.TIMEOUT
    assert results.outcomes[0].reason == "score_timeout"


def test_a_judge_that_raises_is_a_failure(scorers):
    results = Results()
    scorer = make(scorers, ScriptedJudge(mode="raise"))
    scorer.submit(RECORD, results)
    assert scorer.drain(5.0)
    assert results.outcomes[0].status is EvaluationStatus.FAILED
    assert results.outcomes[0].reason == "RuntimeError"


def test_breaker_stops_calls_and_recovers(scorers):
    judge = ScriptedJudge(mode="fail")
    results = Results()
    breaker = CircuitBreaker(failures=2, reset_s=0.2)
    scorer = make(scorers, judge, concurrency=1, breaker=breaker)
    for _ in range(4):
        scorer.submit(RECORD, results)
        assert scorer.drain(5.0)
    assert judge.calls == 2
    assert [o.reason for o in results.outcomes[2:]] == ["circuit_open"] * 2
    judge.mode = "ok"
    threading.Event().wait(0.25)
    scorer.submit(RECORD, results)
    assert scorer.drain(5.0)
    assert results.outcomes[-1].status is EvaluationStatus.SCORED
    assert judge.calls == 3


def test_shutdown_cancels_what_is_left_and_reports_it(scorers):
    judge = ScriptedJudge(mode="hang")
    results = Results()
    scorer = BackgroundScorer(judge, concurrency=1)
    for _ in range(3):
        scorer.submit(RECORD, results)
    assert scorer.shutdown(0.2) is False
    assert [(str(o.status), o.reason) for o in results.outcomes] == [("dropped", "shutdown")] * 3
    assert judge.closed == 1
    assert scorer.submit(RECORD, results) is False
    assert scorer.shutdown(0.1) is True


def test_records_cancelled_by_shutdown_are_not_judge_failures(scorers):
    breaker = CircuitBreaker(failures=1)
    scorer = BackgroundScorer(ScriptedJudge(mode="hang"), concurrency=2, breaker=breaker)
    results = Results()
    for _ in range(4):
        scorer.submit(RECORD, results)
    assert scorer.shutdown(0.1) is False
    assert results.statuses() == ["dropped"] * 4
    assert str(breaker.state) == "closed"  # one counted failure would have opened it


def test_judge_runs_with_instrumentation_suppressed(scorers):
    seen: list[object] = []

    class Probe(ScriptedJudge):
        async def evaluate(self, question, contexts, answer, metrics=ALL_METRICS) -> Scores:
            seen.append(otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY))
            return await super().evaluate(question, contexts, answer, metrics)

    scorer = make(scorers, Probe())
    scorer.submit(RECORD, Results())
    assert scorer.drain(5.0)
    assert seen == [True]
    assert otel_context.get_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY) is None


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        BackgroundScorer(ScriptedJudge(), concurrency=0)
    with pytest.raises(ValueError):
        BackgroundScorer(ScriptedJudge(), timeout_s=0)
