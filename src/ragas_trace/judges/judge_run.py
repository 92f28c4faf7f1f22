"""The calls of one record's evaluation: chat and embeddings requests with retries,
the reply cache, the output-format fallback, and the bookkeeping of what they cost
(calls, tokens, sequential rounds)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
import openai
from openai.types import CreateEmbeddingResponse
from openai.types.chat import ChatCompletion

from ragas_trace.judges.masking import mask
from ragas_trace.judges.parsing import ReplyError, parse_reply
from ragas_trace.judges.prompts import PROMPTS, Message, Task, response_format
from ragas_trace.judges.retry import JudgeCallError, call_with_retries
from ragas_trace.results import JudgeUsage, MetricStatus

if TYPE_CHECKING:
    from ragas_trace.judges.openai_judge import OpenAIJudge

logger = logging.getLogger(__name__)

T = TypeVar("T")
Vector = npt.NDArray[np.float64]

STEP_NAMES = {
    Task.STATEMENTS: "statement extraction",
    Task.QUESTIONS: "question generation",
    Task.CONTEXT: "context-sentence selection",
    Task.VERDICTS: "statement verification",
    Task.GROUNDING: "context-sentence selection and statement verification",
}
# Reply limits: generous for the tasks that copy text, tight for the others.
MAX_TOKENS = {Task.STATEMENTS: 1024, Task.QUESTIONS: 512, Task.CONTEXT: 1024,
              Task.VERDICTS: 4096, Task.GROUNDING: 4096}
# No model reads or writes this many tokens in one reply; a larger count is a lie that
# would trip the token budget at once (and overflow an int64 span attribute).
_MAX_TOKENS_PER_REPLY = 100_000_000
_WEAKER_FORMAT = {"json_schema": "json_object", "json_object": "none"}


def reply_limit(judge: OpenAIJudge, task: Task) -> int:
    """``task``'s reply limit, lowered to the judge's ``max_reply_tokens`` if set."""
    cap = judge.max_reply_tokens
    return min(MAX_TOKENS[task], cap) if cap else MAX_TOKENS[task]


class JudgeRun:
    def __init__(self, judge: OpenAIJudge, deadline: float) -> None:
        self._judge = judge
        self._deadline = deadline
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._chat_calls = 0
        self._embedding_calls = 0
        self._rounds = 0
        self._invalid_usage = 0
        self._embedding_tokens = 0

    def usage(self) -> JudgeUsage:
        return JudgeUsage(self._prompt_tokens, self._completion_tokens, self._chat_calls,
                          self._embedding_calls, self._rounds, self._invalid_usage,
                          self._embedding_tokens)

    def _charge(self, usage: object, *fields: str, embedding: bool = False) -> None:
        """Add a reply's token counts; a count that is not a plausible number (NaN,
        negative, text: the endpoint's ``usage`` is not validated by the client) is
        ignored and counted, so it never reaches the token budget or a span."""
        if usage is None:
            return
        counts = [_token_count(getattr(usage, name, None)) for name in fields]
        if any(c is None for c in counts):
            self._invalid_usage += 1
            logger.debug("judge reply's usage is not a token count; ignored")
        prompt, *completion = [c or 0 for c in counts]
        self._prompt_tokens += prompt
        self._completion_tokens += sum(completion)
        if embedding:
            self._embedding_tokens += prompt

    async def chat(self, task: Task, user: str, parse: Callable[[dict[str, Any]], T],
                   depth: int) -> T:
        """Ask ``task`` and parse the reply; ``JudgeCallError`` names the step on failure."""
        judge = self._judge
        messages = PROMPTS[task].messages(user)
        cache = judge.cache
        key = cache.key(kind="chat", model=judge.model, messages=messages,
                        max_tokens=reply_limit(judge, task)) if cache is not None else ""
        cached = cache.get(key) if cache is not None else None
        step = STEP_NAMES[task]
        if isinstance(cached, str):
            return parse_reply(cached, "stop", parse, user)
        self._chat_calls += 1
        self._rounds = max(self._rounds, depth)
        try:
            completion = await call_with_retries(
                lambda timeout: self._create_chat(task, messages, timeout),
                deadline=self._deadline, attempt_timeout_s=judge.timeout_s,
                max_retries=judge.max_retries, secret=judge.secret)
        except JudgeCallError as exc:
            raise JudgeCallError(exc.status, f"{step}: {exc.reason}") from exc
        self._charge(completion.usage, "prompt_tokens", "completion_tokens")
        try:
            if not completion.choices:
                raise ReplyError("the reply has no choices")
            choice = completion.choices[0]
            content = choice.message.content
            value = parse_reply(content, choice.finish_reason, parse, user)
        except ReplyError as exc:
            raise JudgeCallError(MetricStatus.FAILED, f"{step}: {exc}") from exc
        if cache is not None and content is not None:
            cache.put(key, content)
        return value

    async def _create_chat(self, task: Task, messages: list[Message],
                           timeout: float) -> ChatCompletion:
        judge = self._judge
        while True:
            mode = judge.response_format
            fmt = response_format(task, mode)
            extra: dict[str, Any] = {judge.token_limit_param: reply_limit(judge, task)}
            if fmt is not None:
                extra["response_format"] = fmt
            if judge.send_temperature:
                extra["temperature"] = 0  # the paper's judge is deterministic
            try:
                return await judge.client().chat.completions.create(
                    model=judge.model, messages=messages,  # type: ignore[arg-type]
                    timeout=timeout, **extra)
            except openai.BadRequestError as exc:
                if not _adapt(judge, exc, extra, mode):
                    raise

    async def embed(self, texts: list[str], depth: int) -> list[Vector]:
        """Embeddings of ``texts`` in one call (cached ones are not asked again)."""
        judge = self._judge
        cache = judge.cache
        keys = [cache.key(kind="embedding", model=judge.embedding_model, text=t)
                if cache is not None else "" for t in texts]
        found: dict[int, Vector] = {}
        if cache is not None:
            for i, key in enumerate(keys):
                hit = cache.get(key)
                if isinstance(hit, np.ndarray):
                    found[i] = hit
        todo = [i for i in range(len(texts)) if i not in found]
        if todo:
            self._embedding_calls += 1
            self._rounds = max(self._rounds, depth)
            try:
                response = await call_with_retries(
                    lambda timeout: judge.client().embeddings.create(
                        model=judge.embedding_model, input=[texts[i] for i in todo],
                        encoding_format="float", timeout=timeout),
                    deadline=self._deadline, attempt_timeout_s=judge.timeout_s,
                    max_retries=judge.max_retries, secret=judge.secret)
            except JudgeCallError as exc:
                raise JudgeCallError(exc.status, f"embedding: {exc.reason}") from exc
            vectors = _vectors(response, len(todo), judge.embedding_dimension)
            judge.embedding_dimension = len(vectors[0])
            self._charge(response.usage, "prompt_tokens", embedding=True)
            for i, vector in zip(todo, vectors, strict=True):
                found[i] = vector
                if cache is not None:
                    cache.put(keys[i], vector)
        return [found[i] for i in range(len(texts))]


def _token_count(value: object) -> int | None:
    """``value`` as a token count, or None when it cannot be one. Absent counts are 0."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0 or value > _MAX_TOKENS_PER_REPLY \
            or value != int(value):
        return None
    return int(value)


def _vectors(response: CreateEmbeddingResponse, expected: int,
             dimension: int | None) -> list[Vector]:
    """The reply's vectors, refused when they cannot mean anything: a cosine with an
    all-zero, non-finite or differently sized vector would be an invented score.
    Reasons are fixed strings (they become span attributes and metric labels)."""
    data = sorted(response.data, key=lambda d: d.index)
    if len(data) != expected:
        raise JudgeCallError(MetricStatus.FAILED, "embedding: wrong number of vectors")
    try:
        vectors = [np.asarray(d.embedding, dtype=np.float64) for d in data]
    except (TypeError, ValueError):
        raise JudgeCallError(MetricStatus.FAILED, "embedding: vectors are not numbers") from None
    if any(v.ndim != 1 for v in vectors) or len({v.shape for v in vectors}) != 1 \
            or vectors[0].size == 0:
        raise JudgeCallError(MetricStatus.FAILED, "embedding: vectors of different sizes")
    if dimension is not None and vectors[0].size != dimension:
        raise JudgeCallError(MetricStatus.FAILED, "embedding: the vectors' dimension changed")
    if not all(np.isfinite(v).all() for v in vectors):
        raise JudgeCallError(MetricStatus.FAILED, "embedding: non-finite values")
    # Finite values whose squares overflow (1e300) give an infinite norm, and a cosine
    # of 0.0 that would look like a score.
    with np.errstate(over="ignore"):
        norms = [np.linalg.norm(v) for v in vectors]
    if not all(np.isfinite(n) for n in norms):
        raise JudgeCallError(MetricStatus.FAILED, "embedding: values too large")
    if any(not v.any() for v in vectors):
        raise JudgeCallError(MetricStatus.FAILED, "embedding: all-zero vectors")
    return vectors


def _adapt(judge: OpenAIJudge, exc: openai.BadRequestError, sent: dict[str, Any],
           mode: str) -> bool:
    """Change what the judge sends when the endpoint refused a part of what this
    request ``sent`` (remembered for later calls; concurrent calls may have adapted
    already); False when the error is about something else."""
    text = f"{exc.message} {exc.body}".lower()
    if "max_tokens" in text and "max_tokens" in sent:
        judge.token_limit_param = "max_completion_tokens"  # newer OpenAI models
    elif "temperature" in text and "temperature" in sent:
        judge.send_temperature = False  # models that only sample at their default
    elif ("response_format" in text or "json_schema" in text or "json schema" in text) \
            and mode in _WEAKER_FORMAT:
        if judge.response_format == mode:
            judge.response_format = _WEAKER_FORMAT[mode]
    else:
        return False
    logger.warning("judge endpoint refused a request (%s); adapting and retrying",
                   mask(exc.message, judge.secret)[:300])
    return True
