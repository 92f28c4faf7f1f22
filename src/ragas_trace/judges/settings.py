"""The LLM judge's settings in one table: keyword argument, else environment
variable, else default. A bad keyword raises ``ValueError`` naming the parameter; a
bad environment value is logged and the default used."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

RESPONSE_FORMATS = ("json_schema", "json_object", "none")


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    default: Any
    parse: Callable[[str], Any]
    valid: Callable[[Any], bool]
    help: str


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _count(low: int, high: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and low <= v <= high


SETTINGS: tuple[Setting, ...] = (
    Setting("model", "RAGAS_TRACE_JUDGE_MODEL", "gpt-4o-mini", str, _text,
            "chat model of the judge"),
    Setting("embedding_model", "RAGAS_TRACE_EMBEDDING_MODEL", "text-embedding-3-small", str,
            _text, "embedding model for answer relevance"),
    Setting("base_url", "OPENAI_BASE_URL", None, str, _text,
            "OpenAI-compatible endpoint, e.g. http://localhost:8080/v1"),
    Setting("api_key", "OPENAI_API_KEY", None, str, _text,
            "API key (optional when base_url is set)"),
    Setting("timeout_s", "RAGAS_TRACE_JUDGE_TIMEOUT_S", 60.0, float, _positive,
            "time limit of one HTTP attempt"),
    Setting("total_timeout_s", "RAGAS_TRACE_JUDGE_TOTAL_TIMEOUT_S", 180.0, float, _positive,
            "time budget of one record, retries included"),
    Setting("max_retries", "RAGAS_TRACE_JUDGE_MAX_RETRIES", 3, int, _count(0, 20),
            "retries of one call on 429, 5xx, timeouts and connection errors"),
    Setting("n_questions", "RAGAS_TRACE_JUDGE_QUESTIONS", 3, int, _count(1, 10),
            "questions generated from the answer (one call)"),
    Setting("response_format", "RAGAS_TRACE_JUDGE_RESPONSE_FORMAT", "json_schema", str,
            lambda v: v in RESPONSE_FORMATS,
            "json_schema | json_object | none; lowered automatically when refused"),
    Setting("cache", "RAGAS_TRACE_JUDGE_CACHE", 0, int, _count(0, 10_000_000),
            "reply cache entries; 0 = no cache (the keyword also takes True or a ResponseCache)"),
)


def resolve(kwargs: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for s in SETTINGS:
        given = kwargs.get(s.name)
        if given is not None:
            if isinstance(given, int) and not isinstance(given, bool) and s.parse is float:
                given = float(given)
            if not s.valid(given):
                raise ValueError(f"{s.name}: invalid value {given!r} ({s.help})")
            values[s.name] = given
            continue
        raw = env.get(s.env)
        values[s.name] = s.default
        if raw is None or not raw.strip():
            continue
        try:
            parsed = s.parse(raw.strip())
        except ValueError:
            parsed = None
        if parsed is not None and s.valid(parsed):
            values[s.name] = parsed
        else:
            logger.warning("ignoring %s=%r (%s); using %r", s.env, raw, s.help, s.default)
    return values
