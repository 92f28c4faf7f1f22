"""The collector's records: which LlamaIndex objects matter (roles), one record per
request and one per span of ours, and the context variable that says which span of
ours encloses the code running now."""

from __future__ import annotations

import time
from contextvars import ContextVar, Token
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.chat_engine.types import BaseChatEngine, StreamingAgentChatResponse
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.tools.types import BaseTool
from llama_index.core.workflow import Workflow
from opentelemetry import context as otel_context
from opentelemetry.trace import Span

# Roles of the objects whose dispatcher spans matter. Plain ints, not an Enum: member
# access on an Enum class costs about 0.15 µs in CPython 3.11, and this runs per span.
# STEP: spans without an object, among them every workflow step (whose output event
# may carry passages). POSTPROCESSOR: node postprocessors and rerankers; SYNTHESIZER:
# response synthesizers (the nodes they are given are what the model reads).
(OTHER, QUERY_ENGINE, CHAT_ENGINE, RETRIEVER, LLM, CHAT_STREAM, ROOT, WORKFLOW, TOOL, STEP,
 POSTPROCESSOR, SYNTHESIZER) = range(12)
_ROLE_CLASSES = (
    (BaseQueryEngine, QUERY_ENGINE),
    (BaseChatEngine, CHAT_ENGINE),
    (Workflow, WORKFLOW),
    (BaseRetriever, RETRIEVER),
    (BaseNodePostprocessor, POSTPROCESSOR),
    (BaseSynthesizer, SYNTHESIZER),
    (BaseLLM, LLM),
    (BaseTool, TOOL),
    (StreamingAgentChatResponse, CHAT_STREAM),
    (type(None), STEP),
)
_UUID_SUFFIX = 37  # "-" + str(uuid4())


def role_of_class(cls: type) -> int:
    return next((role for base, role in _ROLE_CLASSES if issubclass(cls, base)), OTHER)


def span_name(id_: str) -> str:
    """Dispatcher span ids are ``<Class>.<method>-<uuid4>``."""
    if len(id_) > _UUID_SUFFIX and id_[-_UUID_SUFFIX] == "-":
        return id_[:-_UUID_SUFFIX]
    return id_


def method_of(id_: str) -> str:
    return span_name(id_).rpartition(".")[2]


class Request:
    """One captured engine call, from its root span's start to its answer."""

    __slots__ = ("awaiting_writer", "deadline", "done", "early_end", "ended", "passage_ids",
                 "pending_llms", "root", "streaming")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.root: Node | None = None
        self.streaming = False
        self.awaiting_writer = False
        # A chat stream's writer thread may finish before the engine call returns.
        self.early_end: tuple[str | None, BaseException | None] | None = None
        self.pending_llms: list[Node] = []
        # Child nodes that ended before the request: their spans are made with the root's.
        self.done: list[Node] = []
        self.ended = False
        # Workflow runs only: ids of the passages recorded so far, so that nodes a step
        # passes on (or a tool returns) after a retriever span recorded them are not
        # recorded twice.
        self.passage_ids: set[str] | None = None


class Node:
    """One span of ours, started by the dispatcher span ``li_id``.

    The request's spans are made in one burst when it ends, each with its own start
    and end times and every attribute in one SDK call (see ``Tracker._end_request``);
    a node still open then gets its span in the burst and ends it later."""

    __slots__ = ("aliases", "attrs", "ctx", "end_ns", "ended", "error", "has_input",
                 "instance_id", "last_nodes", "li_id", "name", "parent", "parent_ctx",
                 "pending", "request", "role", "span", "start_ns", "token")

    def __init__(self, li_id: str, role: int, span: Span | None, request: Request,
                 parent: Node | None = None, attrs: dict[str, Any] | None = None) -> None:
        self.li_id = li_id
        # The span's name when not the dispatcher span's (a tool's own name).
        self.name: str | None = None
        self.role = role
        self.span = span
        self.request = request
        self.parent = parent
        self.attrs = attrs
        self.start_ns = time.time_ns()
        self.ctx: otel_context.Context | None = None
        # A root's parent: the OpenTelemetry context current when the request started.
        self.parent_ctx: otel_context.Context | None = None
        self.end_ns = 0
        self.error: BaseException | None = None
        # Dispatcher ids of LLM calls nested in this one (their end events name them).
        self.aliases: list[str] = []
        self.instance_id = 0
        self.pending = False
        self.ended = False
        # An LLM call's input messages are recorded (its first start event).
        self.has_input = False
        self.token: Token[Node | None] | None = None
        # The node list the latest RETRIEVER / RERANKER child of this node recorded
        # (per parent: an agent's tool calls run at once).
        self.last_nodes: list[Any] | None = None


# The innermost span of ours around the running code. LlamaIndex tracks its own spans
# the same way (a ContextVar), so this follows the same threads and tasks; the stream
# wrappers set it while the user's ``next()`` runs the lazily started LLM.
CURRENT: ContextVar[Node | None] = ContextVar("ragas_trace_llamaindex_node", default=None)
