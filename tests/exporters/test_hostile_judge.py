"""A hostile judge endpoint seen from the exported spans (issue 24 rows 2 and 12):
no credential in any exported attribute, event or log line, and bad ``usage``
neither reaches a span nor breaks the hourly token budget."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.exporters.evaluation_span import SPAN_NAME
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.judges.prompts import Task
from ragas_trace.scorer.sampler import Sampler
from ragas_trace.testing.openai_server import FakeOpenAIServer, Fault
from ragas_trace.testing.rag_spans import evaluation_status, rag_request

KEY = "sk-proj-Zq8vR2mK7tX4wL9nB3cF6hJ1sD5gA0eYuIoP"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as s:
        yield s


def _values(spans: tuple[ReadableSpan, ...]) -> Iterator[object]:
    for span in spans:
        yield span.name
        yield from (span.attributes or {}).values()
        for event in span.events:
            yield event.name
            yield from (event.attributes or {}).values()


@pytest.mark.parametrize(("fault", "status"), [
    (Fault.ECHO_HEADERS, 401), (Fault.ECHO_HEADERS, 429), (Fault.ECHO_HEADERS, 500),
    (Fault.ECHO_HEADERS, 400), (Fault.UNAUTHORIZED, 401)])
@pytest.mark.parametrize("task", [None, Task.STATEMENTS])
def test_no_credential_in_spans_events_or_logs(make_rig, server, caplog, fault, status, task):
    """Every call failing (the root's reason), or one step (an evaluation span and
    its events carry the failed metric's explanation)."""
    server.inject(fault, times=None, status=status, retry_after_s=0.01, task=task)
    judge = OpenAIJudge(model="m", base_url=server.base_url, api_key=KEY, max_retries=1)
    rig = make_rig(judge)
    with caplog.at_level(logging.DEBUG):
        rag_request(rig.tracer)
        assert rig.processor.force_flush(10_000)
        if task is not None:
            assert rig.wait(lambda spans: bool(rig.named(SPAN_NAME)))
    phrase = f"judge HTTP {status}" + ("" if status in (400, 401) else " (after 2 attempts)")
    (root,) = rig.named("rag")
    if task is None:
        assert evaluation_status(root) == "failed"
        assert root.attributes[sc.RAGAS_EVALUATION_REASON].endswith(phrase)
    else:
        events = [e for span in rig.named(SPAN_NAME) for e in span.events
                  if e.name == sc.GEN_AI_EVALUATION_RESULT]
        explained = [str(e.attributes[sc.GEN_AI_EVALUATION_EXPLANATION]) for e in events]
        assert any(phrase in x for x in explained), explained
    exported = "\n".join(str(v) for v in _values(rig.spans()))
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for text in (exported, logged):
        for secret in (KEY, KEY[8:-4], f"{KEY[:4]}****", f"****{KEY[-4:]}"):
            assert secret not in text


def test_bad_usage_is_not_on_spans_and_the_budget_still_trips(make_rig, server):
    judge = OpenAIJudge(model="m", base_url=server.base_url, api_key=KEY, max_retries=0)
    sampler = Sampler(1.0, token_budget_per_hour=500)  # a record costs about 800
    rig = make_rig(judge, sampler=sampler)
    server.inject(Fault.BAD_USAGE, times=None, usage=float("nan"))
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    server.clear_faults()
    rag_request(rig.tracer)  # a normal record: more than the budget
    assert rig.processor.force_flush(10_000)
    rag_request(rig.tracer)
    assert rig.processor.force_flush(10_000)
    first, second, third = rig.named("rag")
    assert [evaluation_status(s) for s in (first, second)] == ["scored", "scored"]
    assert first.attributes[sc.RAGAS_JUDGE_INVALID_USAGE] == 4
    for name in (sc.RAGAS_JUDGE_PROMPT_TOKENS, sc.RAGAS_JUDGE_COMPLETION_TOKENS):
        value = first.attributes[name]
        assert isinstance(value, int) and value == 0
        assert second.attributes[name] > 0
    assert sc.RAGAS_JUDGE_INVALID_USAGE not in second.attributes
    assert evaluation_status(third) == "not_sampled"
    assert third.attributes[sc.RAGAS_EVALUATION_REASON] == "token_budget"
    assert not any(isinstance(v, float) and not math.isfinite(v)
                   for v in _values(rig.spans()))
