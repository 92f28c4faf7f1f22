import os
import shutil
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from ragas_trace._internal_errors import internal_error_counts

# Our own bugs must fail tests instead of being logged and swallowed.
os.environ["RAGAS_TRACE_RAISE_INTERNAL_ERRORS"] = "1"

# The property tests (the *_any_text modules): under make test a fixed seed (derived
# from each test) and the example counts each test states, so a run is repeatable and
# quick; HYPOTHESIS_PROFILE=long searches 20 times as many examples, with a new seed
# each run and failures kept in .hypothesis/ to be replayed first next time.
_SLOW_IS_FINE = [HealthCheck.too_slow, HealthCheck.data_too_large,
                 HealthCheck.large_base_example]
settings.register_profile("ci", derandomize=True, database=None, deadline=None,
                          print_blob=True, suppress_health_check=_SLOW_IS_FINE)
settings.register_profile("long", max_examples=2000, deadline=None, print_blob=True,
                          suppress_health_check=_SLOW_IS_FINE)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which tests were skipped and why (the reasons name the missing tool and
    how to install it), even without ``-rs``: a skipped test proves nothing."""
    reasons: Counter[str] = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        if isinstance(report.longrepr, tuple):
            reasons[report.longrepr[2].removeprefix("Skipped: ")] += 1
    if not reasons:
        return
    terminalreporter.section("skipped for want of a tool")
    for reason, count in sorted(reasons.items()):
        terminalreporter.line(f"{count:3d} x {reason}")


@pytest.fixture(scope="session")
def promtool() -> str:
    """promtool comes from Debian's ``prometheus`` package, which ``.ci/run`` installs."""
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed (apt-get install prometheus; .ci/run does)")
    return path


@pytest.fixture
def no_internal_errors() -> Iterator[None]:
    """The test ends with no more internal errors counted than it started with (under
    the switch above each one also raises where it happens)."""
    before = internal_error_counts()
    yield
    assert internal_error_counts() == before
