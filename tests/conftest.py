import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from ragas_trace._internal_errors import internal_error_counts
from ragas_trace.exporters.metrics import ScorerMetrics

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


# Per property suite run: what ragas_internal_errors_total grew by, by place.
_PROPERTY_SUITES: dict[str, dict[str, int]] = {}


@pytest.fixture(scope="session")
def internal_errors_metric() -> Callable[[], dict[str, int]]:
    """Reads ``ragas_internal_errors_total`` by ``where`` as a metric reader collects
    it from the scorer's own instruments (the series /metrics serves)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    ScorerMetrics(MeterProvider(metric_readers=[reader]), "tests")

    def read() -> dict[str, int]:
        data = reader.get_metrics_data()
        return {str((p.attributes or {})["where"]): int(p.value)
                for rm in (data.resource_metrics if data else ())
                for sm in rm.scope_metrics for m in sm.metrics
                if m.name == "ragas.internal_errors" for p in m.data.data_points}

    return read


@pytest.fixture(scope="module", autouse=True)
def _property_suites_count_no_internal_error(
        request: pytest.FixtureRequest,
        internal_errors_metric: Callable[[], dict[str, int]]) -> Iterator[None]:
    """Each property suite (a ``*_any_text`` module) ends with
    ``ragas_internal_errors_total`` where it started: any text, no bug of ours."""
    module = request.module.__name__
    if not module.endswith("_any_text"):
        yield
        return
    before = internal_errors_metric()
    yield
    after = internal_errors_metric()
    grown = {where: n - before.get(where, 0) for where, n in after.items()
             if n != before.get(where, 0)}
    _PROPERTY_SUITES[module] = grown
    assert not grown, f"internal errors counted in {module}: {grown}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many internal errors the property suites counted, and which tests
    were skipped and why (the reasons name the missing tool and how to install it),
    even without ``-rs``: a skipped test proves nothing."""
    if _PROPERTY_SUITES:
        counted = sum(n for grown in _PROPERTY_SUITES.values() for n in grown.values())
        terminalreporter.line(f"ragas_internal_errors_total grew by {counted} over "
                              f"{len(_PROPERTY_SUITES)} property suites (*_any_text)")
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
