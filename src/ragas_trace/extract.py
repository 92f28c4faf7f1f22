"""Build a ``RagRecord`` from a finished trace's spans.

This is the only place that knows how question, passages and answer are spelled
in span attributes: our own collectors and OpenInference instrumentations
(``input.value``, ``retrieval.documents.*``) and OpenLLMetry
(``traceloop.entity.input`` / ``.output``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace._chat_json import latest_text
from ragas_trace.record import Context, RagRecord, passage_score

# ``str_or_query_bundle``: OpenLLMetry's LlamaIndex spans record a query engine's
# bound arguments, a string or a QueryBundle (whose ``query_str`` is then found).
_QUESTION_KEYS = ("question", "input", "query", "query_str", "str_or_query_bundle",
                  "user_input", "message", "prompt")
_ANSWER_KEYS = ("answer", "output", "result", "response", "generation", "final_answer", "text",
                "content")
_ROOT_KINDS = frozenset({sc.KIND_CHAIN, "AGENT"})


def span_kind(span: ReadableSpan) -> str | None:
    """The OpenInference span kind, or the OpenLLMetry one mapped onto it."""
    attrs = span.attributes or {}
    kind = attrs.get(sc.SPAN_KIND)
    if isinstance(kind, str):
        return kind.upper()
    tl_kind = attrs.get(sc.TRACELOOP_SPAN_KIND)
    if tl_kind == "workflow":
        return sc.KIND_CHAIN
    if tl_kind == "task" and _is_openllmetry_retriever(span):
        return sc.KIND_RETRIEVER
    if attrs.get(sc.GEN_AI_OPERATION_NAME) == sc.GEN_AI_OPERATION_RETRIEVAL:
        return sc.KIND_RETRIEVER
    return None


def is_rag_root_candidate(span: ReadableSpan) -> bool:
    """A CHAIN/AGENT (or OpenLLMetry workflow) span that carries a question.

    Whether it is the *top* such span of its trace depends on its ancestors; see
    ``find_root``. A processor seeing spans one at a time decides that from the
    parent's kind.
    """
    return span_kind(span) in _ROOT_KINDS and question_of(span) is not None


def find_root(spans: Sequence[ReadableSpan]) -> ReadableSpan | None:
    """The top-most root candidate: one whose ancestors in ``spans`` are no candidates."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    best: ReadableSpan | None = None
    for span in spans:
        if not is_rag_root_candidate(span):
            continue
        if any(is_rag_root_candidate(a) for a in _ancestors(span, by_id)):
            continue
        if best is None or (span.start_time or 0) < (best.start_time or 0):
            best = span
    return best


def extract_record(
    spans: Iterable[ReadableSpan], root: ReadableSpan | None = None
) -> RagRecord | None:
    """The record of the request rooted at ``root`` (default: ``find_root(spans)``).

    Passages come from RETRIEVER spans that descend from the root, in start order,
    except where a RERANKER span (a node postprocessor, reranker or filter) says which
    of them the model was given (see ``_Passages``). Returns ``None`` when no root with
    a question is found. Never raises on malformed attributes: a field that cannot be
    read is left out.
    """
    span_list = list(spans)
    if root is None:
        root = find_root(span_list)
        if root is None:
            return None
    if root.context is None:
        return None
    by_id = {s.context.span_id: s for s in span_list if s.context is not None}
    root_id = root.context.span_id
    passages = _Passages(by_id)
    prompt_tokens = completion_tokens = 0
    saw_usage = False
    response_id = model = None
    for span in sorted(span_list, key=lambda s: s.start_time or 0):
        if span is root or span.context is None:
            continue
        if not any(a.context is not None and a.context.span_id == root_id
                   for a in _ancestors(span, by_id)):
            continue
        kind = span_kind(span)
        if kind == sc.KIND_RETRIEVER:
            passages.retrieved(span)
        elif kind == sc.KIND_RERANKER:
            passages.reranked(span)
        elif kind == sc.KIND_LLM:
            llm_attrs = span.attributes or {}
            found = llm_attrs.get(sc.GEN_AI_RESPONSE_ID)
            if isinstance(found, str) and found:
                response_id = found  # in start order: the last call answered
            model = _model_of(llm_attrs) or model
            usage = _usage_of(llm_attrs)
            if usage is not None:
                saw_usage = True
                prompt_tokens += usage[0]
                completion_tokens += usage[1]
    attrs = root.attributes or {}
    error = None
    if root.status is not None and not root.status.is_ok and root.status.description:
        error = root.status.description
    app_name = attrs.get(sc.RAGAS_APP_NAME)
    framework = attrs.get(sc.RAGAS_FRAMEWORK)
    return RagRecord(
        question=question_of(root),
        contexts=tuple(passages.used()),
        answer=answer_of(root),
        trace_id=root.context.trace_id,
        span_id=root_id,
        app_name=app_name if isinstance(app_name, str) else root.name,
        framework=framework if isinstance(framework, str) else None,
        start_time_ns=root.start_time,
        end_time_ns=root.end_time,
        prompt_tokens=prompt_tokens if saw_usage else None,
        completion_tokens=completion_tokens if saw_usage else None,
        error=error,
        response_id=response_id,
        model=model,
        attributes=dict(attrs),
    )


def _model_of(attrs: Mapping[str, Any]) -> str | None:
    for key in (sc.GEN_AI_REQUEST_MODEL, sc.LLM_MODEL_NAME, sc.GEN_AI_RESPONSE_MODEL):
        value = attrs.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def question_of(span: ReadableSpan) -> str | None:
    attrs = span.attributes or {}
    value = attrs.get(sc.INPUT_VALUE)
    if value is None:
        value = attrs.get(sc.TRACELOOP_ENTITY_INPUT)
    return _text_from(value, _QUESTION_KEYS, "user")


def answer_of(span: ReadableSpan) -> str | None:
    attrs = span.attributes or {}
    value = attrs.get(sc.OUTPUT_VALUE)
    if value is None:
        value = attrs.get(sc.TRACELOOP_ENTITY_OUTPUT)
    return _text_from(value, _ANSWER_KEYS, "assistant")


def documents_of(span: ReadableSpan) -> list[Context]:
    """Passages of a RETRIEVER span: OpenInference attributes, else OpenLLMetry output."""
    attrs = span.attributes or {}
    docs = _documents(attrs, sc.RETRIEVAL_DOCUMENTS)
    if docs:
        return docs
    return _openllmetry_documents(attrs.get(sc.TRACELOOP_ENTITY_OUTPUT))


def reranked_documents_of(span: ReadableSpan) -> list[Context]:
    """The passages a RERANKER span passed on (OpenInference ``reranker.output_documents``)."""
    return _documents(span.attributes or {}, sc.RERANKER_OUTPUT_DOCUMENTS)


def _documents(attrs: Mapping[str, Any], prefix: str) -> list[Context]:
    docs: list[Context] = []
    i = 0
    while True:
        content = attrs.get(sc.document_key(i, sc.DOCUMENT_CONTENT, prefix))
        doc_id = attrs.get(sc.document_key(i, sc.DOCUMENT_ID, prefix))
        if content is None and doc_id is None:
            break
        score = attrs.get(sc.document_key(i, sc.DOCUMENT_SCORE, prefix))
        docs.append(Context(
            content=content if isinstance(content, str) else "",
            id=str(doc_id) if doc_id is not None else None,
            score=passage_score(score),
            metadata=_json_object(attrs.get(sc.document_key(i, sc.DOCUMENT_METADATA, prefix))),
        ))
        i += 1
    return docs


class _Passages:
    """The passages the model was given, from a request's RETRIEVER and RERANKER spans
    seen in start order.

    Each span's passages form a group. A RERANKER's output replaces the earlier groups,
    under the RERANKER's parent span, that share a passage (by id or text) with it: what
    it was given, whether a retrieval or an earlier reranker's output, so a chain of
    postprocessors leaves the last one's output, and branches that retrieved other
    passages (a parallel retrieval, another tool call) keep theirs; a passage of which
    it holds only a prefix (the part a prompt showed) counts as shared. A RERANKER that kept
    nothing replaces the group just before it. A span marked
    ``ragas.retrieval.discarded`` (a failed attempt's retrieval, one a later retrieval
    replaced in the answering prompt) takes part in that replacing but gives no
    passages. Without RERANKER spans (most instrumentations) this is every retrieved
    passage, in order."""

    def __init__(self, by_id: Mapping[int, ReadableSpan]) -> None:
        self._by_id = by_id
        self._groups: list[tuple[ReadableSpan, list[Context]]] = []
        self._discarded: set[int] = set()

    def retrieved(self, span: ReadableSpan) -> None:
        self._note_discarded(span)
        self._groups.append((span, documents_of(span)))

    def reranked(self, span: ReadableSpan) -> None:
        self._note_discarded(span)
        docs = reranked_documents_of(span)
        parent = span.parent.span_id if span.parent is not None else None
        earlier = [i for i, (group_span, _) in enumerate(self._groups)
                   if parent is None or any(a.context is not None and a.context.span_id == parent
                                            for a in _ancestors(group_span, self._by_id))]
        if docs:
            ids = {d.id for d in docs if d.id is not None}
            texts = {d.content for d in docs}
            replaced = {i for i in earlier
                        if any(_kept_from(c, texts, ids) for c in self._groups[i][1])}
        else:
            replaced = set(earlier[-1:])
        self._groups = [g for i, g in enumerate(self._groups) if i not in replaced]
        self._groups.append((span, docs))

    def used(self) -> list[Context]:
        return [c for span, docs in self._groups if id(span) not in self._discarded
                for c in docs]

    def _note_discarded(self, span: ReadableSpan) -> None:
        if (span.attributes or {}).get(sc.RAGAS_RETRIEVAL_DISCARDED):
            self._discarded.add(id(span))


def _kept_from(passage: Context, texts: set[str], ids: set[str]) -> bool:
    """Whether a reranker's output holds ``passage``: by id, by text, or as the part of
    its text a prompt showed (a prefix: an app cut it to fit)."""
    content = passage.content
    return (content in texts or (passage.id is not None and passage.id in ids)
            or any(t and content.startswith(t) for t in texts))


def _ancestors(span: ReadableSpan, by_id: Mapping[int, ReadableSpan]) -> Iterable[ReadableSpan]:
    seen: set[int] = set()
    parent = span.parent
    while parent is not None and parent.span_id not in seen:
        seen.add(parent.span_id)
        node = by_id.get(parent.span_id)
        if node is None:
            return
        yield node
        parent = node.parent


def _text_from(value: Any, keys: Sequence[str], role: str) -> str | None:
    """A string attribute, or the first known key of a JSON object in it."""
    if not isinstance(value, str):
        return None
    stripped = value.strip()
    if stripped[:1] in ("{", "["):
        decoded = _loads(stripped)
        if decoded is _NOT_JSON:
            return value
        found = _find_text(decoded, keys, role, depth=0)
        return found if found is not None else value
    return value


def _find_text(obj: Any, keys: Sequence[str], role: str, depth: int) -> str | None:
    if depth > 4:
        return None
    if isinstance(obj, str):
        return obj
    if isinstance(obj, Mapping):
        for key in keys:
            if key in obj:
                found = _find_text(obj[key], keys, role, depth + 1)
                if found is not None:
                    return found
        messages = obj.get("messages")
        if isinstance(messages, list):
            # A graph's message state: "" when it holds no such message (a turn that
            # ended on a tool call has no answer), rather than the whole JSON.
            return latest_text(messages, role) or ""
        # OpenLLMetry wraps entities as {"inputs": {...}} / {"outputs": {...}}; LangChain
        # messages as {"kwargs": {"content": ...}}.
        for wrapper in ("inputs", "outputs", "kwargs", "generations"):
            if wrapper in obj:
                found = _find_text(obj[wrapper], keys, role, depth + 1)
                if found is not None:
                    return found
    if isinstance(obj, list) and obj:
        return _find_text(obj[-1], keys, role, depth + 1)
    return None


_NOT_JSON = object()


def _loads(text: str) -> Any:
    """The JSON value of ``text``, or ``_NOT_JSON``. JSON nested past the interpreter's
    recursion limit (``[[[[...]]]]`` 10,000 deep) is not JSON to us: the decoder
    recurses once per level and raises ``RecursionError``, not ``ValueError``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _usage_of(attrs: Mapping[str, Any]) -> tuple[int, int] | None:
    prompt = attrs.get(sc.LLM_TOKEN_COUNT_PROMPT, attrs.get(sc.GEN_AI_USAGE_INPUT_TOKENS))
    completion = attrs.get(sc.LLM_TOKEN_COUNT_COMPLETION, attrs.get(sc.GEN_AI_USAGE_OUTPUT_TOKENS))
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    return (prompt if isinstance(prompt, int) else 0,
            completion if isinstance(completion, int) else 0)


def _json_object(value: Any) -> Mapping[str, Any] | None:
    decoded = _loads(value) if isinstance(value, str) else None
    return decoded if isinstance(decoded, dict) else None


def _is_openllmetry_retriever(span: ReadableSpan) -> bool:
    attrs = span.attributes or {}
    name = attrs.get(sc.TRACELOOP_ENTITY_NAME)
    return isinstance(name, str) and "retriev" in name.lower()


def _openllmetry_documents(value: Any) -> list[Context]:
    """OpenLLMetry serialises a retriever's result as JSON of LangChain Documents."""
    if not isinstance(value, str):
        return []
    decoded = _loads(value)
    if isinstance(decoded, Mapping):
        decoded = decoded.get("outputs", decoded.get("documents", decoded))
    if not isinstance(decoded, list):
        return []
    docs = []
    for item in decoded:
        if isinstance(item, str) and item.lstrip().startswith("{"):
            # OpenLLMetry's LlamaIndex encoder writes each NodeWithScore as a JSON string.
            item = _json_object(item) or item
        if isinstance(item, Mapping) and isinstance(item.get("node"), Mapping):
            docs.extend(_node_with_score(item))
        elif isinstance(item, Mapping):
            kwargs = item.get("kwargs")
            body = kwargs if isinstance(kwargs, Mapping) else item
            content = body.get("page_content", body.get("text", body.get("content")))
            if isinstance(content, str):
                meta = body.get("metadata")
                doc_id = body.get("id")
                docs.append(Context(content, id=str(doc_id) if doc_id else None,
                                    metadata=meta if isinstance(meta, Mapping) else None))
        elif isinstance(item, str):
            docs.append(Context(item))
    return docs


def _node_with_score(item: Mapping[str, Any]) -> list[Context]:
    """A LlamaIndex ``NodeWithScore`` as dumped to JSON: ``{"node": {...}, "score": x}``."""
    node = item["node"]
    text = node.get("text")
    if not isinstance(text, str):
        return []
    score = item.get("score")
    meta = node.get("metadata")
    node_id = node.get("id_")
    return [Context(text, id=str(node_id) if node_id else None,
                    score=passage_score(score),
                    metadata=meta if isinstance(meta, Mapping) else None)]
