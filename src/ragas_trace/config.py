"""Every setting of the scorer and exporters, in ONE table: name, environment
variable, default, parser, help. A keyword argument beats the environment, which
beats the default. A bad keyword argument raises ``ValueError`` naming it; a bad
environment value is logged and the default used instead, so a typo in a
deployment never takes the app down.

The documentation's configuration table is generated from ``SETTINGS`` (see
``settings_table_markdown`` and ``tools/gen_docs.py``) and a test keeps the two in step."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragas_trace._settings import (
    Setting,
    auto_boolean,
    boolean,
    check_fields,
    choice,
    integer,
    number,
    optional,
    port,
    resolve,
    settings_table,
    text,
)
from ragas_trace.exporters.annotations import DEFAULT_ENDPOINT, DEFAULT_HOST, annotation_names
from ragas_trace.exporters.spool import DIRECTORY_NAME
from ragas_trace.judges.base import judge_thresholds
from ragas_trace.scorer.pricing import Price, parse_prices


def _judge(value: object) -> str:
    lowered = text(value).lower()
    name, _, model = lowered.partition(":")
    if name not in ("local", "openai", "off") or (name in ("local", "off") and model):
        raise ValueError(f"expected local, openai, openai:MODEL or off, got {value!r}")
    return lowered


SETTINGS: tuple[Setting, ...] = (
    Setting("service_name", "OTEL_SERVICE_NAME", None, optional(text),
            "`service` label of the metrics and `service.name` of a provider we create"),
    Setting("exporter", "RAGAS_TRACE_EXPORTER", "auto",
            choice("auto", "otlp", "console", "none"),
            "where spans go when no `SpanExporter` is passed: `auto` = OTLP if "
            "`OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set, else none"),
    Setting("judge", "RAGAS_TRACE_JUDGE", "local", _judge,
            "`local` (offline), `openai` or `openai:MODEL` (any OpenAI-compatible endpoint); "
            "the keyword also takes a judge object; `off`: this process scores nothing and "
            "exports its spans unchanged, for a `ragas-trace serve` sidecar to score "
            "(pre-fork servers: one judge per host, at idle CPU priority)"),
    Setting("judge_model", "RAGAS_TRACE_JUDGE_MODEL", None, optional(text),
            "chat model of the `openai` judge (its own default when unset)"),
    Setting("embedding_model", "RAGAS_TRACE_EMBEDDING_MODEL", None, optional(text),
            "embedding model of the `openai` judge (its own default when unset)"),
    Setting("local_checker", "RAGAS_TRACE_LOCAL_CHECKER", None, optional(text),
            "directory of an ONNX checker model for the `local` judge's check stage "
            "(`model.onnx`, `tokenizer.json`, `checker.json`; see the checker guide); "
            "the built-in checker when unset"),
    Setting("sample_rate", "RAGAS_TRACE_SAMPLE_RATE", 1.0, number(0.0, 1.0),
            "fraction of RAG requests scored, decided from the trace id "
            "(same decision in every process)"),
    Setting("max_evaluations_per_minute", "RAGAS_TRACE_MAX_EVALUATIONS_PER_MINUTE", 0,
            integer(0), "cap on evaluations started per minute (0 = no cap)"),
    Setting("judge_token_budget_per_hour", "RAGAS_TRACE_JUDGE_TOKEN_BUDGET_PER_HOUR", 0,
            integer(0), "judge tokens allowed per rolling hour (0 = no budget)"),
    Setting("judge_budget_usd_per_day", "RAGAS_TRACE_JUDGE_BUDGET_USD_PER_DAY", 0.0,
            number(0.0), "judge spend allowed per rolling day, in US dollars priced with "
            "`judge_prices` (0 = no budget); a judge model without a price is refused "
            "at setup"),
    Setting("judge_prices", "RAGAS_TRACE_JUDGE_PRICES", None, optional(parse_prices),
            "USD per million tokens of judge models, added to (or overriding) the "
            "defaults: `MODEL=INPUT/OUTPUT,...`, an embedding model `MODEL=INPUT`; "
            "the keyword also takes a mapping"),
    Setting("always_score_attribute", "RAGAS_TRACE_ALWAYS_SCORE_ATTRIBUTE",
            "ragas.evaluation.always", text,
            "a RAG span with this attribute set to true is scored regardless of "
            "sample rate and per-minute cap (not of the token and USD budgets)"),
    Setting("hold_timeout_s", "RAGAS_TRACE_HOLD_TIMEOUT_S", 30.0, number(0.0, above=True),
            "longest a finished RAG span is held for its scores; then exported "
            "with status `timeout`"),
    Setting("score_timeout_s", "RAGAS_TRACE_SCORE_TIMEOUT_S", None,
            optional(number(0.0, above=True)),
            "per-record judge timeout (default: the hold timeout)"),
    Setting("max_held_spans", "RAGAS_TRACE_MAX_HELD_SPANS", 1000, integer(1),
            "RAG spans held at once; past it a span is exported with status `dropped`"),
    Setting("max_open_traces", "RAGAS_TRACE_MAX_OPEN_TRACES", 10000, integer(1),
            "RAG traces whose retriever/LLM spans are remembered until their root ends"),
    Setting("queue_size", "RAGAS_TRACE_QUEUE_SIZE", 1000, integer(1),
            "records waiting for the judge; past it a record is dropped (counted)"),
    Setting("concurrency", "RAGAS_TRACE_CONCURRENCY", 8, integer(1),
            "records scored at the same time"),
    Setting("breaker_failures", "RAGAS_TRACE_BREAKER_FAILURES", 5, integer(1),
            "consecutive judge failures that open the circuit breaker"),
    Setting("breaker_reset_s", "RAGAS_TRACE_BREAKER_RESET_S", 30.0, number(0.0, above=True),
            "how long the breaker stays open before one probe record is let through"),
    Setting("threshold_faithfulness", "RAGAS_TRACE_THRESHOLD_FAITHFULNESS", None,
            optional(number(0.0, 1.0)), "`ragas.faithfulness.label` is pass at or above "
            "this (default: the judge's own, calibrated on development data)"),
    Setting("threshold_answer_relevance", "RAGAS_TRACE_THRESHOLD_ANSWER_RELEVANCE", None,
            optional(number(0.0, 1.0)), "`ragas.answer_relevance.label` is pass at or above "
            "this (default: the judge's own)"),
    Setting("threshold_context_relevance", "RAGAS_TRACE_THRESHOLD_CONTEXT_RELEVANCE", None,
            optional(number(0.0, 1.0)),
            "`ragas.context_relevance.label` is pass at or above this (default: the "
            "judge's own)"),
    Setting("content", "RAGAS_TRACE_CONTENT", "keep", choice("keep", "drop", "redact"),
            "question, passages and answer in exported spans: keep, drop, or pass "
            "through the `redact` function (keyword only)"),
    Setting("max_content_chars", "RAGAS_TRACE_MAX_CONTENT_CHARS", 0, integer(0),
            "truncate each exported content attribute to this many characters (0 = no limit)"),
    Setting("evaluation_spans", "RAGAS_TRACE_EVALUATION_SPANS", None, auto_boolean,
            "emit an EVALUATOR span (a trace of its own) linked to each scored span: "
            "`auto` (default) = on, except with Phoenix annotations and no "
            "`evaluation_project` (they would fill the app's trace list); `true`, `false`"),
    Setting("evaluation_project", "RAGAS_TRACE_EVALUATION_PROJECT", None, optional(text),
            "Phoenix project (`openinference.project.name`) for the evaluation spans "
            "ragas-trace exports, apart from the app's; with `auto` it turns them on"),
    Setting("evaluation_logs", "RAGAS_TRACE_EVALUATION_LOGS", None, auto_boolean,
            "emit one `gen_ai.evaluation.result` log record per evaluated metric "
            "(OpenTelemetry Logs API, in the evaluated span's context): `auto` (default) "
            "= on where a logs exporter is configured (a `logger_provider`, a global SDK "
            "one, or an OTLP endpoint that is not traces-only); `true`, `false`"),
    Setting("project_from_service", "RAGAS_TRACE_PROJECT_FROM_SERVICE", False, boolean,
            "file spans of a provider we create under the Phoenix project named after the "
            "service (`openinference.project.name`), unless already set"),
    Setting("annotations", "RAGAS_TRACE_ANNOTATIONS", (), annotation_names,
            "also write each score as Phoenix annotations (span, trace, per passage) "
            "and/or a Langfuse score: `phoenix`, `langfuse` or `phoenix,langfuse`"),
    Setting("phoenix_endpoint", "PHOENIX_COLLECTOR_ENDPOINT", DEFAULT_ENDPOINT, text,
            "Phoenix's base URL, for its annotations API"),
    Setting("phoenix_api_key", "PHOENIX_API_KEY", None, optional(text),
            "Phoenix API key, sent as a bearer token"),
    Setting("langfuse_host", "LANGFUSE_HOST", DEFAULT_HOST, text,
            "Langfuse's base URL, for its scores API"),
    Setting("langfuse_public_key", "LANGFUSE_PUBLIC_KEY", None, optional(text),
            "Langfuse project public key (basic auth user)"),
    Setting("langfuse_secret_key", "LANGFUSE_SECRET_KEY", None, optional(text),
            "Langfuse project secret key (basic auth password)"),
    Setting("annotation_queue_size", "RAGAS_TRACE_ANNOTATION_QUEUE_SIZE", 10000, integer(1),
            "annotations waiting to be sent, per backend; past it they are dropped (counted)"),
    Setting("annotation_retry_s", "RAGAS_TRACE_ANNOTATION_RETRY_S", 30.0, number(0.0),
            "how long an annotation is retried (with backoff) while its backend fails or "
            "does not have its span yet; then it is counted lost"),
    Setting("metrics_port", "RAGAS_TRACE_METRICS_PORT", None, optional(port),
            "serve a Prometheus scrape endpoint on this port (0 = any free port)"),
    Setting("metrics_host", "RAGAS_TRACE_METRICS_HOST", "127.0.0.1", text,
            "address the Prometheus endpoint listens on (`0.0.0.0` for every interface)"),
    Setting("app_name", "RAGAS_TRACE_APP_NAME", None, optional(text),
            "the `app` label of the scorer's metrics for requests whose root span has no "
            "`ragas.app.name` (a handler's `app_name`); without it, `unknown`. Span and "
            "run names never become label values"),
    Setting("max_app_labels", "RAGAS_TRACE_MAX_APP_LABELS", 100, integer(1),
            "distinct `app` label values on the scorer's metrics; later apps are "
            "recorded as `other` and counted in `ragas_metrics_folded_labels_total`"),
    Setting("exit_grace_s", "RAGAS_TRACE_EXIT_GRACE_S", 20.0, number(0.0),
            "at interpreter exit and on SIGTERM, the one deadline for everything held: the "
            "judge gets up to 60 % of it for the held spans, the export of spans and "
            "annotations the rest; what is left then goes to the spool (or leaves with "
            "status `dropped`, reason `shutdown`, and is counted lost). The default fits "
            "gunicorn's 30 s `graceful_timeout` with 10 s for the server's own shutdown "
            "(uvicorn finishing its requests)"),
    Setting("spool_dir", "RAGAS_TRACE_SPOOL_DIR", "auto", text,
            "directory where the exit path keeps what it could not deliver by its "
            "deadline, for the next process that starts with it: `auto` = a "
            "`ragas-trace-spool` folder in `PROMETHEUS_MULTIPROC_DIR` when that "
            "variable is set, else none; `none` turns it off"),
    Setting("spool_max_mb", "RAGAS_TRACE_SPOOL_MAX_MB", 64.0, number(0.0, above=True),
            "bound on the spool's files together, in MiB; past it entries are not kept "
            "(logged, counted in `ragas_spool_total{event=\"full\"}`)"),
    Setting("spool_max_entries", "RAGAS_TRACE_SPOOL_MAX_ENTRIES", 100000, integer(1),
            "bound on the entries (spans, annotations) in the spool's files together"),
    Setting("handle_sigterm", "RAGAS_TRACE_HANDLE_SIGTERM", True, boolean,
            "install a SIGTERM handler (only where the app has none) that flushes, then "
            "ends the process as the default disposition would"),
)


@dataclass(frozen=True)
class Settings:
    """Resolved settings; build with ``Settings.load(**kwargs)``."""

    service_name: str | None
    exporter: str
    judge: str
    judge_model: str | None
    embedding_model: str | None
    local_checker: str | None
    sample_rate: float
    max_evaluations_per_minute: int
    judge_token_budget_per_hour: int
    judge_budget_usd_per_day: float
    judge_prices: dict[str, Price] | None
    always_score_attribute: str
    hold_timeout_s: float
    score_timeout_s: float | None
    max_held_spans: int
    max_open_traces: int
    queue_size: int
    concurrency: int
    breaker_failures: int
    breaker_reset_s: float
    threshold_faithfulness: float | None
    threshold_answer_relevance: float | None
    threshold_context_relevance: float | None
    content: str
    max_content_chars: int
    evaluation_spans: bool | None
    evaluation_project: str | None
    evaluation_logs: bool | None
    project_from_service: bool
    annotations: tuple[str, ...]
    phoenix_endpoint: str
    phoenix_api_key: str | None
    langfuse_host: str
    langfuse_public_key: str | None
    langfuse_secret_key: str | None
    annotation_queue_size: int
    annotation_retry_s: float
    metrics_port: int | None
    metrics_host: str
    app_name: str | None
    max_app_labels: int
    exit_grace_s: float
    spool_dir: str
    spool_max_mb: float
    spool_max_entries: int
    handle_sigterm: bool

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
            values[setting.name] = resolve(setting, kwargs.get(setting.name), environ,
                                           label=f"ragas-trace setting {setting.name!r}")
        return cls(**values)

    @property
    def effective_score_timeout_s(self) -> float:
        return self.score_timeout_s if self.score_timeout_s is not None else self.hold_timeout_s

    @property
    def emit_evaluation_spans(self) -> bool:
        """``evaluation_spans`` with ``auto`` resolved: Phoenix shows the annotations
        on the request's own spans, so there an evaluation trace per request only
        crowds the app's trace list, unless routed to a project of its own."""
        if self.evaluation_spans is not None:
            return self.evaluation_spans
        return self.evaluation_project is not None or "phoenix" not in self.annotations

    @property
    def spool_path(self) -> str | None:
        """``spool_dir`` with ``auto`` and ``none`` resolved."""
        chosen = self.spool_dir.strip()
        if chosen.lower() in ("", "none", "off"):
            return None
        if chosen.lower() != "auto":
            return chosen
        multiproc = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        return os.path.join(multiproc, DIRECTORY_NAME) if multiproc else None

    def thresholds_for(self, judge: object) -> dict[str, float]:
        """Each metric's pass threshold: the one set here, else the judge's own
        (``judge.thresholds``, calibrated for it), else the LLM judges' default."""
        defaults = judge_thresholds(judge)
        chosen = {"faithfulness": self.threshold_faithfulness,
                  "answer_relevance": self.threshold_answer_relevance,
                  "context_relevance": self.threshold_context_relevance}
        return {m: v if v is not None else defaults[m] for m, v in chosen.items()}


def settings_table_markdown() -> str:
    """The configuration table of ``docs/reference/settings.md``."""
    return settings_table(SETTINGS)


check_fields(SETTINGS, Settings)
