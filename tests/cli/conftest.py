from collections.abc import Iterator

import pytest

from ragas_trace.testing.openai_server import FakeOpenAIServer
from ragas_trace.testing.scripted_judge import ScriptedJudge


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """The loopback OpenAI server, configured through the environment as a user would."""
    with FakeOpenAIServer() as s:
        monkeypatch.setenv("OPENAI_BASE_URL", s.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("RAGAS_TRACE_JUDGE_MAX_RETRIES", "0")
        yield s


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> ScriptedJudge:
    """What --judge local resolves to: a scripted judge (the input handling is tested
    here, not a judge)."""
    scripted = ScriptedJudge(0.8)
    monkeypatch.setattr("ragas_trace.judges.resolve_judge", lambda spec=None: scripted)
    return scripted
