"""``OpenAIJudge``: the paper's method on any OpenAI-compatible endpoint (OpenAI,
Azure, vLLM, Ollama, llama.cpp server, LiteLLM), through the ``openai`` async client.

Per record at most 3 chat calls and 1 embeddings call in at most 2 sequential
rounds. Round one runs statement extraction and question generation (all questions
in one call) concurrently; round two, in one call over one copy of the context,
selects the context sentences the question needs and verifies every statement, and
embeds the question with the generated questions. Context sentences are selected
and cited by number, never copied out.

Every HTTP call runs with OpenTelemetry instrumentation suppressed, so an app that
also instruments ``openai`` or ``httpx`` never sees the judge's calls in its traces.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai
from opentelemetry import context as otel_context

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.judges import settings
from ragas_trace.judges.cache import DEFAULT_SIZE, ResponseCache
from ragas_trace.judges.judge_run import STEP_NAMES, JudgeRun
from ragas_trace.judges.masking import mask
from ragas_trace.judges.parsing import (
    ReplyError,
    Verdict,
    parse_context_sentences,
    parse_questions,
    parse_statements,
    parse_verdicts,
)
from ragas_trace.judges.prompts import (
    Task,
    context_input,
    grounding_input,
    questions_input,
    statements_input,
    verdicts_input,
)
from ragas_trace.judges.reply_limit import bounded_client
from ragas_trace.judges.retry import JudgeCallError
from ragas_trace.metrics import answer_relevance, context_relevance, faithfulness
from ragas_trace.metrics.context_relevance import ContextMatch, passage_sentences
from ragas_trace.results import (
    ALL_METRICS,
    Metric,
    MetricResult,
    MetricStatus,
    Scores,
    StatementVerdict,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")
_NO_KEY = "unused"  # local endpoints ignore the key, but the client insists on one


class OpenAIJudge:
    """LLM judge. Arguments beat environment variables (``RAGAS_TRACE_JUDGE_MODEL``,
    ``RAGAS_TRACE_EMBEDDING_MODEL``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, and the
    ``RAGAS_TRACE_JUDGE_*`` ones in ``judges/settings.py``), which beat defaults.

    ``cache``: ``True`` or a number of entries for a reply cache, or a shared
    ``ResponseCache``; off by default.
    """

    def __init__(
        self,
        model: str | None = None,
        embedding_model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float | None = None,
        max_retries: int | None = None,
        cache: bool | int | ResponseCache | None = None,
        *,
        total_timeout_s: float | None = None,
        n_questions: int | None = None,
        response_format: str | None = None,
        max_reply_tokens: int | None = None,
        max_reply_bytes: int | None = None,
    ) -> None:
        shared_cache = cache if isinstance(cache, ResponseCache) else None
        if cache is True:
            cache = DEFAULT_SIZE
        elif cache is False or shared_cache is not None:
            cache = 0 if cache is False else None
        cfg = settings.resolve_all({
            "model": model, "embedding_model": embedding_model, "base_url": base_url,
            "api_key": api_key, "timeout_s": timeout_s, "max_retries": max_retries,
            "cache": cache, "total_timeout_s": total_timeout_s, "n_questions": n_questions,
            "response_format": response_format, "max_reply_tokens": max_reply_tokens,
            "max_reply_bytes": max_reply_bytes,
        })
        if cfg["api_key"] is None and cfg["base_url"] is None:
            raise ValueError("api_key: no API key; pass api_key= or set OPENAI_API_KEY "
                             "(or pass base_url= for a local endpoint that needs none)")
        self.model: str = cfg["model"]
        self.embedding_model: str = cfg["embedding_model"]
        self.base_url: str | None = cfg["base_url"]
        self._api_key: str = cfg["api_key"] or _NO_KEY
        self.timeout_s: float = cfg["timeout_s"]
        self.total_timeout_s: float = cfg["total_timeout_s"]
        self.max_retries: int = cfg["max_retries"]
        self.n_questions: int = cfg["n_questions"]
        self.response_format: str = cfg["response_format"]
        self.max_reply_tokens: int = cfg["max_reply_tokens"]
        self.max_reply_bytes: int = cfg["max_reply_bytes"]
        # Lowered when the endpoint refuses them (see judge_run._adapt).
        self.token_limit_param = "max_tokens"
        self.send_temperature = True
        # The embedding model's dimension, from its first reply: a later reply of
        # another size is refused (see judge_run._vectors).
        self.embedding_dimension: int | None = None
        self.cache: ResponseCache | None = shared_cache or (
            ResponseCache(cfg["cache"]) if cfg["cache"] else None)
        # One client per event loop: an httpx pool must not outlive its loop (the
        # synchronous ``score()`` runs a fresh loop per call).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] \
            = weakref.WeakKeyDictionary()

    @property
    def name(self) -> str:
        return f"openai:{self.model}"

    @property
    def secret(self) -> str | None:
        """The configured API key, to mask wherever judge text is logged."""
        return self._api_key if self._api_key != _NO_KEY else None

    def client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(api_key=self._api_key, base_url=self.base_url,
                                        max_retries=0, timeout=self.timeout_s,
                                        http_client=bounded_client(self.max_reply_bytes))
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        self._clients.clear()  # clients of finished loops cannot be closed any more
        if client is not None:
            await client.close()

    async def evaluate(
        self,
        question: str | None,
        contexts: Sequence[str],
        answer: str | None,
        metrics: frozenset[Metric] = ALL_METRICS,
    ) -> Scores:
        started = time.monotonic()
        run = JudgeRun(self, deadline=started + self.total_timeout_s)
        token = otel_context.attach(_suppressed())
        try:
            return await self._evaluate(run, question, contexts, answer, metrics, started)
        except Exception as exc:  # a bug of ours must not break the scorer
            record_internal_error("OpenAIJudge.evaluate", exc)
            failed = MetricResult.unscored(MetricStatus.FAILED,
                                           f"internal error: {type(exc).__name__}")
            return Scores(self.name, {m: failed for m in metrics}, usage=run.usage(),
                          duration_s=time.monotonic() - started)
        finally:
            otel_context.detach(token)

    async def _evaluate(self, run: JudgeRun, question: str | None, contexts: Sequence[str],
                        answer: str | None, metrics: frozenset[Metric],
                        started: float) -> Scores:
        q = (question or "").strip()
        a = (answer or "").strip()
        ctx = [c for c in ([contexts] if isinstance(contexts, str) else contexts)
               if isinstance(c, str) and c.strip()]
        passages = passage_sentences(ctx)
        missing = {
            Metric.FAITHFULNESS: _missing(answer=a, contexts=ctx),
            Metric.ANSWER_RELEVANCE: _missing(question=q, answer=a),
            Metric.CONTEXT_RELEVANCE: _missing(question=q, contexts=ctx),
        }
        skipped = MetricResult.unscored(MetricStatus.SKIPPED)

        async def nothing(value: T) -> T:
            return value

        wanted = {m for m in metrics if missing[m] is None}
        grounding, relevance = await asyncio.gather(
            self._grounding(run, q, passages, ctx, a, wanted),
            self._answer_relevance(run, q, a) if Metric.ANSWER_RELEVANCE in wanted
            else nothing((skipped, ())),
        )
        computed = {Metric.FAITHFULNESS: grounding.faithfulness,
                    Metric.ANSWER_RELEVANCE: relevance[0],
                    Metric.CONTEXT_RELEVANCE: grounding.context_relevance}
        results = {m: missing[m] or computed[m] for m in metrics}
        return Scores(
            judge=self.name,
            results=results,
            statements=grounding.verdicts,
            generated_questions=relevance[1],
            context_sentences=sum(len(p) for p in passages)
            if Metric.CONTEXT_RELEVANCE in metrics else 0,
            kept_sentences=grounding.match.kept,
            usage=run.usage(),
            duration_s=time.monotonic() - started,
        )

    async def _grounding(self, run: JudgeRun, question: str, passages: list[list[str]],
                         contexts: list[str], answer: str, wanted: set[Metric]) -> _Grounding:
        """Faithfulness and context relevance. Both read the whole context, so when both
        are wanted and the answer has statements, one call selects the sentences the
        question needs and verifies the statements over a single copy of it (round
        two); context relevance alone is one call in round one."""
        result = _Grounding()
        want_faith = Metric.FAITHFULNESS in wanted
        want_context = Metric.CONTEXT_RELEVANCE in wanted
        statements: list[str] = []
        if want_faith:
            try:
                statements = await run.chat(Task.STATEMENTS, statements_input(question, answer),
                                            parse_statements, depth=1)
            except JudgeCallError as exc:
                result.faithfulness = MetricResult.unscored(exc.status, exc.reason)
                want_faith = False
            else:
                if not statements:
                    result.faithfulness = faithfulness([])
                    want_faith = False
        depth = 2 if Metric.FAITHFULNESS in wanted else 1
        try:
            if want_faith and want_context:
                selected, verdicts = await run.chat(
                    Task.GROUNDING, grounding_input(question, passages, statements),
                    _grounding_parser(statements), depth=depth)
            elif want_faith:
                selected, verdicts = None, await run.chat(
                    Task.VERDICTS, verdicts_input(passages, statements),
                    _verdict_parser(statements), depth=depth)
            elif want_context:
                selected, verdicts = await run.chat(
                    Task.CONTEXT, context_input(question, passages), parse_context_sentences,
                    depth=depth), None
            else:
                return result
        except JudgeCallError as exc:
            failed = MetricResult.unscored(exc.status, exc.reason)
            if want_faith:
                result.faithfulness = failed
            if want_context:
                result.context_relevance = failed
            return result
        if isinstance(verdicts, JudgeCallError):
            result.faithfulness = MetricResult.unscored(verdicts.status, verdicts.reason)
        elif verdicts is not None:
            sentences = [s for p in passages for s in p]
            result.verdicts = tuple(
                StatementVerdict(s, ok, _explanation(ok, mask(reason, self.secret), evidence,
                                                     sentences))
                for s, (ok, reason, evidence) in zip(statements, verdicts, strict=True))
            result.faithfulness = faithfulness(result.verdicts)
        if selected is not None:
            chosen, insufficient = selected
            result.context_relevance, result.match = context_relevance(
                contexts, chosen, insufficient)
            if result.match.unmatched:
                logger.debug("judge selected %d sentences not in the context",
                             len(result.match.unmatched))
        return result

    async def _answer_relevance(self, run: JudgeRun, question: str,
                                answer: str) -> tuple[MetricResult, tuple[str, ...]]:
        try:
            generated, noncommittal = await run.chat(
                Task.QUESTIONS, questions_input(answer, self.n_questions), parse_questions,
                depth=1)
            if noncommittal or not generated:
                return answer_relevance([], [], noncommittal), tuple(generated)
            vectors = await run.embed([question, *generated], depth=2)
        except JudgeCallError as exc:
            return MetricResult.unscored(exc.status, exc.reason), ()
        return answer_relevance(vectors[0], vectors[1:]), tuple(generated)


@dataclass
class _Grounding:
    faithfulness: MetricResult = field(
        default_factory=lambda: MetricResult.unscored(MetricStatus.SKIPPED))
    verdicts: tuple[StatementVerdict, ...] = ()
    context_relevance: MetricResult = field(
        default_factory=lambda: MetricResult.unscored(MetricStatus.SKIPPED))
    match: ContextMatch = field(default_factory=lambda: ContextMatch(0, (), ()))


Selection = tuple[list[int | str], bool]


def _grounding_parser(statements: list[str]) -> Callable[
        [dict[str, Any]], tuple[Selection, list[Verdict] | JudgeCallError]]:
    """Both parts of a grounding reply. A bad verdicts part fails faithfulness only; a
    bad selection part fails the call (the reply is not one we can trust)."""
    def parse(reply: dict[str, Any]) -> tuple[Selection, list[Verdict] | JudgeCallError]:
        selected = parse_context_sentences(reply)
        try:
            return selected, parse_verdicts(reply, statements)
        except ReplyError as exc:
            return selected, JudgeCallError(MetricStatus.FAILED,
                                            f"{STEP_NAMES[Task.VERDICTS]}: {exc}")
    return parse


def _verdict_parser(statements: list[str]) -> Callable[[dict[str, Any]], list[Verdict]]:
    return lambda reply: parse_verdicts(reply, statements)


def _explanation(supported: bool, reason: str, evidence: list[int],
                 sentences: list[str]) -> str:
    """The judge's reason, else the context sentences it cited as evidence."""
    if reason:
        return reason
    cited = [f"[{n}] {sentences[n - 1]}" for n in evidence if 1 <= n <= len(sentences)]
    if cited:
        return "supported by " + " ".join(cited) if supported else "see " + " ".join(cited)
    return "" if supported else "no context sentence supports it"


def _missing(**inputs: Any) -> MetricResult | None:
    """The status of a metric whose inputs are absent, or None when all are there."""
    for name, status in (("question", MetricStatus.NO_QUESTION),
                         ("answer", MetricStatus.NO_ANSWER),
                         ("contexts", MetricStatus.NO_CONTEXT)):
        if name in inputs and not inputs[name]:
            return MetricResult.unscored(status, f"the record has no {name}")
    return None


def _suppressed() -> otel_context.Context:
    ctx = otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
    return otel_context.set_value(otel_context._SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, ctx)

