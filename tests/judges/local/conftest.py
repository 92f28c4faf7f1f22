import pytest

from ragas_trace.judges.local import LocalJudge


@pytest.fixture(scope="session")
def judge() -> LocalJudge:
    """One loaded judge for the whole session: loading the model costs ~0.3 s."""
    j = LocalJudge(threads=1)
    j.load()
    return j


@pytest.fixture(scope="session")
def passing(judge: LocalJudge) -> float:
    """Faithfulness at or above this is labelled pass: the judge's calibrated threshold."""
    return judge.thresholds["faithfulness"]
