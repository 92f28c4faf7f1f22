"""The LLM judge's settings in one table (mechanism and precedence in
``ragas_trace._settings``): keyword argument, else environment variable, else
default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ragas_trace._settings import Setting, choice, integer, number, optional, resolve, text

RESPONSE_FORMATS = ("json_schema", "json_object", "none")

SETTINGS: tuple[Setting, ...] = (
    Setting("model", "RAGAS_TRACE_JUDGE_MODEL", "gpt-4o-mini", text,
            "chat model of the judge"),
    Setting("embedding_model", "RAGAS_TRACE_EMBEDDING_MODEL", "text-embedding-3-small", text,
            "embedding model for answer relevance"),
    Setting("base_url", "OPENAI_BASE_URL", None, optional(text),
            "OpenAI-compatible endpoint, e.g. http://localhost:8080/v1"),
    Setting("api_key", "OPENAI_API_KEY", None, optional(text),
            "API key (optional when base_url is set)"),
    Setting("timeout_s", "RAGAS_TRACE_JUDGE_TIMEOUT_S", 60.0, number(0.0, above=True),
            "time limit of one HTTP attempt"),
    Setting("total_timeout_s", "RAGAS_TRACE_JUDGE_TOTAL_TIMEOUT_S", 180.0,
            number(0.0, above=True), "time budget of one record, retries included"),
    Setting("max_retries", "RAGAS_TRACE_JUDGE_MAX_RETRIES", 3, integer(0, 20),
            "retries of one call on 429, 5xx, timeouts and connection errors"),
    Setting("n_questions", "RAGAS_TRACE_JUDGE_QUESTIONS", 3, integer(1, 10),
            "questions generated from the answer (one call)"),
    Setting("response_format", "RAGAS_TRACE_JUDGE_RESPONSE_FORMAT", "json_schema",
            choice(*RESPONSE_FORMATS),
            "json_schema | json_object | none; lowered automatically when refused"),
    Setting("max_reply_tokens", "RAGAS_TRACE_JUDGE_MAX_REPLY_TOKENS", 0,
            integer(0, 1_000_000),
            "cap on each reply's tokens; 0 = per-step limits (1024 statements, 512 "
            "questions, 4096 context sentences and verdicts). Small local models that "
            "repeat themselves until the limit need a low cap"),
    Setting("max_reply_bytes", "RAGAS_TRACE_JUDGE_MAX_REPLY_BYTES", 4 * 1024 * 1024,
            integer(1024, 1 << 30),
            "bytes of one HTTP reply read at most; past it the call fails with "
            "`judge reply over N bytes` (memory stays bounded whatever the endpoint sends)"),
    Setting("cache", "RAGAS_TRACE_JUDGE_CACHE", 0, integer(0, 10_000_000),
            "reply cache entries; 0 = no cache (the keyword also takes True or a ResponseCache)"),
)


def resolve_all(kwargs: Mapping[str, Any],
                environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    return {s.name: resolve(s, kwargs.get(s.name), env) for s in SETTINGS}
