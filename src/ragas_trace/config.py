"""Every setting of the scorer and exporters, in ONE table: name, environment
variable, default, parser, help. A keyword argument beats the environment, which
beats the default. A bad keyword argument raises ``ValueError`` naming it; a bad
environment value is logged and the default used instead, so a typo in a
deployment never takes the app down.

The README's configuration table is generated from ``SETTINGS`` (see
``settings_table_markdown``) and a test keeps the two in step."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

logger = logging.getLogger("ragas_trace")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise ValueError(f"expected a boolean (true/false), got {value!r}")


def _number(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(value.strip())
    raise ValueError(f"expected a number, got {value!r}")


def _integer(value: object) -> int:
    number = _number(value)
    if not number.is_integer():
        raise ValueError(f"expected an integer, got {value!r}")
    return int(number)


def _float_between(low: float, high: float) -> Callable[[object], float]:
    def parse(value: object) -> float:
        number = _number(value)
        if not low <= number <= high:
            raise ValueError(f"expected a number in [{low}, {high}], got {value!r}")
        return number
    return parse


def _positive_float(value: object) -> float:
    number = _number(value)
    if not number > 0:
        raise ValueError(f"expected a positive number, got {value!r}")
    return number


def _int_at_least(low: int) -> Callable[[object], int]:
    def parse(value: object) -> int:
        number = _integer(value)
        if number < low:
            raise ValueError(f"expected an integer >= {low}, got {value!r}")
        return number
    return parse


def _optional(parse: Callable[[object], Any]) -> Callable[[object], Any]:
    def parse_optional(value: object) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return parse(value)
    return parse_optional


def _text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"expected a non-empty string, got {value!r}")
    return value.strip()


def _choice(*choices: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        text = value.strip().lower() if isinstance(value, str) else value
        if text not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {value!r}")
        return str(text)
    return parse


def _judge(value: object) -> str:
    text = _text(value).lower()
    name, _, model = text.partition(":")
    if name not in ("local", "openai") or (name == "local" and model):
        raise ValueError(f"expected local, openai or openai:MODEL, got {value!r}")
    return text


def _port(value: object) -> int:
    number = _integer(value)
    if not 0 <= number <= 65535:
        raise ValueError(f"expected a TCP port (0-65535), got {value!r}")
    return number


@dataclass(frozen=True)
class Setting:
    name: str
    env: str
    default: Any
    parse: Callable[[object], Any]
    help: str


SETTINGS: tuple[Setting, ...] = (
    Setting("service_name", "OTEL_SERVICE_NAME", None, _optional(_text),
            "`service` label of the metrics and `service.name` of a provider we create"),
    Setting("exporter", "RAGAS_TRACE_EXPORTER", "auto",
            _choice("auto", "otlp", "console", "none"),
            "where spans go when no `SpanExporter` is passed: `auto` = OTLP if "
            "`OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set, else none"),
    Setting("judge", "RAGAS_TRACE_JUDGE", "local", _judge,
            "`local` (offline), `openai` or `openai:MODEL` (any OpenAI-compatible endpoint); "
            "the keyword also takes a judge object"),
    Setting("judge_model", "RAGAS_TRACE_JUDGE_MODEL", None, _optional(_text),
            "chat model of the `openai` judge (its own default when unset)"),
    Setting("embedding_model", "RAGAS_TRACE_EMBEDDING_MODEL", None, _optional(_text),
            "embedding model of the `openai` judge (its own default when unset)"),
    Setting("sample_rate", "RAGAS_TRACE_SAMPLE_RATE", 1.0, _float_between(0.0, 1.0),
            "fraction of RAG requests scored, decided from the trace id "
            "(same decision in every process)"),
    Setting("max_evaluations_per_minute", "RAGAS_TRACE_MAX_EVALUATIONS_PER_MINUTE", 0,
            _int_at_least(0), "cap on evaluations started per minute (0 = no cap)"),
    Setting("judge_token_budget_per_hour", "RAGAS_TRACE_JUDGE_TOKEN_BUDGET_PER_HOUR", 0,
            _int_at_least(0), "judge tokens allowed per rolling hour (0 = no budget)"),
    Setting("always_score_attribute", "RAGAS_TRACE_ALWAYS_SCORE_ATTRIBUTE",
            "ragas.evaluation.always", _text,
            "a RAG span with this attribute set to true is scored regardless of "
            "sample rate and per-minute cap (not of the token budget)"),
    Setting("hold_timeout_s", "RAGAS_TRACE_HOLD_TIMEOUT_S", 30.0, _positive_float,
            "longest a finished RAG span is held for its scores; then exported "
            "with status `timeout`"),
    Setting("score_timeout_s", "RAGAS_TRACE_SCORE_TIMEOUT_S", None, _optional(_positive_float),
            "per-record judge timeout (default: the hold timeout)"),
    Setting("max_held_spans", "RAGAS_TRACE_MAX_HELD_SPANS", 1000, _int_at_least(1),
            "RAG spans held at once; past it a span is exported with status `dropped`"),
    Setting("max_open_traces", "RAGAS_TRACE_MAX_OPEN_TRACES", 10000, _int_at_least(1),
            "RAG traces whose retriever/LLM spans are remembered until their root ends"),
    Setting("queue_size", "RAGAS_TRACE_QUEUE_SIZE", 1000, _int_at_least(1),
            "records waiting for the judge; past it a record is dropped (counted)"),
    Setting("concurrency", "RAGAS_TRACE_CONCURRENCY", 8, _int_at_least(1),
            "records scored at the same time"),
    Setting("breaker_failures", "RAGAS_TRACE_BREAKER_FAILURES", 5, _int_at_least(1),
            "consecutive judge failures that open the circuit breaker"),
    Setting("breaker_reset_s", "RAGAS_TRACE_BREAKER_RESET_S", 30.0, _positive_float,
            "how long the breaker stays open before one probe record is let through"),
    Setting("threshold_faithfulness", "RAGAS_TRACE_THRESHOLD_FAITHFULNESS", 0.7,
            _float_between(0.0, 1.0), "`ragas.faithfulness.label` is pass at or above this"),
    Setting("threshold_answer_relevance", "RAGAS_TRACE_THRESHOLD_ANSWER_RELEVANCE", 0.7,
            _float_between(0.0, 1.0), "`ragas.answer_relevance.label` is pass at or above this"),
    Setting("threshold_context_relevance", "RAGAS_TRACE_THRESHOLD_CONTEXT_RELEVANCE", 0.3,
            _float_between(0.0, 1.0),
            "`ragas.context_relevance.label` is pass at or above this"),
    Setting("content", "RAGAS_TRACE_CONTENT", "keep", _choice("keep", "drop", "redact"),
            "question, passages and answer in exported spans: keep, drop, or pass "
            "through the `redact` function (keyword only)"),
    Setting("max_content_chars", "RAGAS_TRACE_MAX_CONTENT_CHARS", 0, _int_at_least(0),
            "truncate each exported content attribute to this many characters (0 = no limit)"),
    Setting("evaluation_spans", "RAGAS_TRACE_EVALUATION_SPANS", True, _bool,
            "emit an EVALUATOR span linked to each scored span"),
    Setting("metrics_port", "RAGAS_TRACE_METRICS_PORT", None, _optional(_port),
            "serve a Prometheus scrape endpoint on this port (0 = any free port)"),
    Setting("metrics_host", "RAGAS_TRACE_METRICS_HOST", "0.0.0.0", _text,
            "address the Prometheus endpoint listens on"),
)


@dataclass(frozen=True)
class Settings:
    """Resolved settings; build with ``Settings.load(**kwargs)``."""

    service_name: str | None
    exporter: str
    judge: str
    judge_model: str | None
    embedding_model: str | None
    sample_rate: float
    max_evaluations_per_minute: int
    judge_token_budget_per_hour: int
    always_score_attribute: str
    hold_timeout_s: float
    score_timeout_s: float | None
    max_held_spans: int
    max_open_traces: int
    queue_size: int
    concurrency: int
    breaker_failures: int
    breaker_reset_s: float
    threshold_faithfulness: float
    threshold_answer_relevance: float
    threshold_context_relevance: float
    content: str
    max_content_chars: int
    evaluation_spans: bool
    metrics_port: int | None
    metrics_host: str

    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> Settings:
        """Keyword argument (when not None) > environment > default.

        Raises ``TypeError`` for an unknown keyword and ``ValueError`` naming the
        parameter for a bad value.
        """
        environ = os.environ if env is None else env
        known = {s.name for s in SETTINGS}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown ragas-trace setting(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            values[setting.name] = _resolve(setting, kwargs.get(setting.name), environ)
        return cls(**values)

    @property
    def effective_score_timeout_s(self) -> float:
        return self.score_timeout_s if self.score_timeout_s is not None else self.hold_timeout_s

    @property
    def thresholds(self) -> dict[str, float]:
        return {
            "faithfulness": self.threshold_faithfulness,
            "answer_relevance": self.threshold_answer_relevance,
            "context_relevance": self.threshold_context_relevance,
        }


def _resolve(setting: Setting, kwarg: object, environ: Mapping[str, str]) -> Any:
    if kwarg is not None:
        try:
            return setting.parse(kwarg)
        except ValueError as exc:
            raise ValueError(f"ragas-trace setting {setting.name!r}: {exc}") from None
    raw = environ.get(setting.env)
    if raw is None or not raw.strip():
        return setting.default
    try:
        return setting.parse(raw)
    except ValueError as exc:
        logger.warning("ignoring %s=%r (%s); using the default %r",
                       setting.env, raw, exc, setting.default)
        return setting.default


def settings_table_markdown() -> str:
    """The README's configuration table."""
    lines = ["| keyword | environment variable | default | meaning |",
             "| --- | --- | --- | --- |"]
    for s in SETTINGS:
        default = "unset" if s.default is None else f"`{s.default}`"
        lines.append(f"| `{s.name}` | `{s.env}` | {default} | {s.help} |")
    return "\n".join(lines)


def _check_table_matches_fields() -> None:
    names = [s.name for s in SETTINGS]
    if names != [f.name for f in fields(Settings)]:
        raise RuntimeError("config.SETTINGS and Settings fields differ")


_check_table_matches_fields()
