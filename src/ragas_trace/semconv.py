"""Attribute names: the conventions we read (OpenInference, OTel GenAI, OpenLLMetry)
and the ``ragas.*`` attributes we write. Every module uses these constants, never
string literals, so a renamed convention is a one-line change."""

from typing import Final

# OpenInference
SPAN_KIND: Final = "openinference.span.kind"
KIND_CHAIN: Final = "CHAIN"
KIND_RETRIEVER: Final = "RETRIEVER"
KIND_LLM: Final = "LLM"
KIND_EMBEDDING: Final = "EMBEDDING"
KIND_EVALUATOR: Final = "EVALUATOR"
KIND_TOOL: Final = "TOOL"
KIND_AGENT: Final = "AGENT"
# A step that reorders or cuts passages (node postprocessor, reranker, filter): its
# ``reranker.output_documents`` are what the model was given.
KIND_RERANKER: Final = "RERANKER"

INPUT_VALUE: Final = "input.value"
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
OUTPUT_MIME_TYPE: Final = "output.mime_type"
MIME_TEXT: Final = "text/plain"
MIME_JSON: Final = "application/json"

RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"
DOCUMENT_CONTENT: Final = "document.content"
DOCUMENT_ID: Final = "document.id"
DOCUMENT_SCORE: Final = "document.score"
DOCUMENT_METADATA: Final = "document.metadata"
RERANKER_OUTPUT_DOCUMENTS: Final = "reranker.output_documents"

LLM_MODEL_NAME: Final = "llm.model_name"
LLM_PROVIDER: Final = "llm.provider"
LLM_SYSTEM: Final = "llm.system"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"

LLM_INPUT_MESSAGES: Final = "llm.input_messages"
LLM_OUTPUT_MESSAGES: Final = "llm.output_messages"
MESSAGE_ROLE: Final = "message.role"
MESSAGE_CONTENT: Final = "message.content"
MESSAGE_TOOL_CALLS: Final = "message.tool_calls"
TOOL_CALL_ID: Final = "tool_call.id"
TOOL_CALL_FUNCTION_NAME: Final = "tool_call.function.name"
TOOL_CALL_FUNCTION_ARGUMENTS: Final = "tool_call.function.arguments"

TOOL_NAME: Final = "tool.name"
TOOL_DESCRIPTION: Final = "tool.description"
TOOL_PARAMETERS: Final = "tool.parameters"

SESSION_ID: Final = "session.id"
USER_ID: Final = "user.id"
METADATA: Final = "metadata"
# Resource attribute: the Phoenix project a span is filed under.
OPENINFERENCE_PROJECT_NAME: Final = "openinference.project.name"

EVALUATIONS: Final = "evaluations"
EVALUATION_NAME: Final = "evaluation.name"
EVALUATION_SCORE: Final = "evaluation.score"
EVALUATION_LABEL: Final = "evaluation.label"
EVALUATION_EXPLANATION: Final = "evaluation.explanation"

# OpenTelemetry GenAI
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_OPERATION_CHAT: Final = "chat"
GEN_AI_OPERATION_EMBEDDINGS: Final = "embeddings"
GEN_AI_OPERATION_RETRIEVAL: Final = "retrieval"
GEN_AI_OPERATION_EXECUTE_TOOL: Final = "execute_tool"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_SYSTEM: Final = "gen_ai.system"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
ERROR_TYPE: Final = "error.type"

# OpenLLMetry (Traceloop)
TRACELOOP_SPAN_KIND: Final = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME: Final = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT: Final = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT: Final = "traceloop.entity.output"
TRACELOOP_WORKFLOW_NAME: Final = "traceloop.workflow.name"

# ragas-trace's own
RAGAS_APP_NAME: Final = "ragas.app.name"
RAGAS_FRAMEWORK: Final = "ragas.framework"
RAGAS_STREAM_STATUS: Final = "ragas.stream.status"
STREAM_COMPLETED: Final = "completed"
STREAM_ABANDONED: Final = "abandoned"  # the consumer stopped reading early
STREAM_ERROR: Final = "error"
# True on a span ended by the collector because its run never sent an end event.
RAGAS_RUN_EVICTED: Final = "ragas.run.evicted"
# True on a span ended because its request was cancelled (asyncio), with no end event.
RAGAS_RUN_CANCELLED: Final = "ragas.run.cancelled"
# On a RETRIEVER or RERANKER span whose passages the answer was not generated from:
# why (a failed attempt's, or replaced in the answering prompt by a later retrieval's).
RAGAS_RETRIEVAL_DISCARDED: Final = "ragas.retrieval.discarded"
DISCARDED_FAILED_ATTEMPT: Final = "failed_attempt"
DISCARDED_SUPERSEDED: Final = "superseded"
# ... or none of its passages is in the answering model's input.
DISCARDED_NOT_IN_PROMPT: Final = "not_in_prompt"
# On a RAG root whose passages could not be chosen by the answering model's input
# (absent: they were, as most are), why every passage retrieved counts:
# ``prompt_unseen``, no model call with callbacks answered (a custom model wrapper);
# ``not_in_prompt``, the answering call's input holds none of them verbatim.
RAGAS_PASSAGES_SOURCE: Final = "ragas.passages.source"
PASSAGES_PROMPT_UNSEEN: Final = "prompt_unseen"
PASSAGES_NOT_IN_PROMPT: Final = "not_in_prompt"
RAGAS_ALWAYS_SCORE: Final = "ragas.evaluation.always"
RAGAS_FAITHFULNESS: Final = "ragas.faithfulness"
RAGAS_ANSWER_RELEVANCE: Final = "ragas.answer_relevance"
RAGAS_CONTEXT_RELEVANCE: Final = "ragas.context_relevance"
RAGAS_EVALUATION_STATUS: Final = "ragas.evaluation.status"
RAGAS_EVALUATION_REASON: Final = "ragas.evaluation.reason"
RAGAS_EVALUATION_JUDGE: Final = "ragas.evaluation.judge"
RAGAS_EVALUATION_DURATION_MS: Final = "ragas.evaluation.duration_ms"
# Hex id of the trace holding the evaluation span (which links back to this span).
RAGAS_EVALUATION_TRACE_ID: Final = "ragas.evaluation.trace_id"
RAGAS_JUDGE_PROMPT_TOKENS: Final = "ragas.evaluation.judge.prompt_tokens"
RAGAS_JUDGE_COMPLETION_TOKENS: Final = "ragas.evaluation.judge.completion_tokens"
RAGAS_JUDGE_INVALID_USAGE: Final = "ragas.evaluation.judge.invalid_usage"
RAGAS_STATEMENTS_TOTAL: Final = "ragas.faithfulness.statements"
RAGAS_STATEMENTS_SUPPORTED: Final = "ragas.faithfulness.statements_supported"
RAGAS_CONTEXT_SENTENCES: Final = "ragas.context_relevance.sentences"
RAGAS_CONTEXT_SENTENCES_KEPT: Final = "ragas.context_relevance.sentences_kept"


def document_key(index: int, field: str, prefix: str = RETRIEVAL_DOCUMENTS) -> str:
    """``retrieval.documents.{index}.{field}``, e.g. ``document_key(0, DOCUMENT_CONTENT)``;
    ``prefix=RERANKER_OUTPUT_DOCUMENTS`` for a reranker's output."""
    return f"{prefix}.{index}.{field}"


def message_key(direction: str, index: int, field: str) -> str:
    """``llm.<direction>_messages.{index}.<field>``; ``direction`` is ``input`` or ``output``,
    e.g. ``message_key("input", 0, MESSAGE_ROLE)``."""
    return f"llm.{direction}_messages.{index}.{field}"


def tool_call_key(direction: str, index: int, call: int, field: str) -> str:
    """``llm.<direction>_messages.{index}.message.tool_calls.{call}.<field>``."""
    return f"{message_key(direction, index, MESSAGE_TOOL_CALLS)}.{call}.{field}"


def metric_attribute(metric: str) -> str:
    """``ragas.<metric>``: the score attribute of a metric name."""
    return f"ragas.{metric}"


def metric_label_attribute(metric: str) -> str:
    """``ragas.<metric>.label``: pass / fail against the configured threshold."""
    return f"ragas.{metric}.label"


def metric_status_attribute(metric: str) -> str:
    """``ragas.<metric>.status``: why a metric has no score (no_statements, failed...)."""
    return f"ragas.{metric}.status"

# OpenTelemetry exception events (``Span.record_exception``): the message and the
# stack trace often quote the request (``ValueError(f"no answer for {question!r}")``).
EXCEPTION_MESSAGE = "exception.message"
EXCEPTION_STACKTRACE = "exception.stacktrace"
