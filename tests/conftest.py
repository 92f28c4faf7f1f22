import os
import shutil
from collections import Counter

import pytest

# Our own bugs must fail tests instead of being logged and swallowed.
os.environ["RAGAS_TRACE_RAISE_INTERNAL_ERRORS"] = "1"


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
