"""The demo's recording wrapper passes on what labels depend on: the wrapped judge's
own thresholds (the LLM judges' defaults only for a judge that has none)."""

from ragas_trace.demo.recording import RecordingJudge
from ragas_trace.judges.base import judge_thresholds
from ragas_trace.judges.local.judge import LocalJudge
from ragas_trace.results import DEFAULT_THRESHOLDS
from ragas_trace.testing.scripted_judge import ScriptedJudge


def test_a_wrapped_judge_keeps_its_own_thresholds() -> None:
    local = LocalJudge()
    assert local.thresholds  # the fitted ones ship with the package
    assert judge_thresholds(RecordingJudge(local)) == judge_thresholds(local)


def test_a_judge_without_thresholds_gets_the_defaults_through_the_wrapper() -> None:
    assert judge_thresholds(RecordingJudge(ScriptedJudge())) == dict(DEFAULT_THRESHOLDS)
