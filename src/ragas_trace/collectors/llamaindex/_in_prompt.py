"""The passages of a LlamaIndex request that reached its answering model's input,
decided when the request ends without error: whatever code stood between the
retrieval and the prompt (a postprocessor called by hand in a ``CustomQueryEngine``,
a token budget, a cut of each passage), as the LangChain collector does
(``_prompt_passages`` finds them).

The answering call is the latest LLM call whose completion is the answer, else the
latest that started after a retrieval ended (a streamed answer's call is still open
then). A RETRIEVER or RERANKER span before it none of whose passages is in its input
is marked ``ragas.retrieval.discarded = not_in_prompt``; when the input shows fewer
passages than the rest hold, or a part of one, a RERANKER span under the root holds
what it shows. Where the input was not seen, or holds none of the passages, every
passage counts, and the root's ``ragas.passages.source`` says why."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from ragas_trace import semconv as sc
from ragas_trace.collectors import _prompt_passages
from ragas_trace.collectors._attributes import RETRIEVAL_DOCUMENTS_TOTAL
from ragas_trace.collectors.llamaindex._nodes import LLM, POSTPROCESSOR, RETRIEVER, Node

_FIELDS = (sc.DOCUMENT_CONTENT, sc.DOCUMENT_ID, sc.DOCUMENT_SCORE, sc.DOCUMENT_METADATA)
# The input messages an LLM span records (``message_attributes`` keeps 64 at most).
_MAX_MESSAGES = 64


class Choice:
    """Why the root's passages are every one retrieved (``source``, None when they
    are not); with ``attrs`` (the RERANKER span's) and ``start_ns`` when
    a span must say which passages the prompt shows."""

    __slots__ = ("attrs", "source", "start_ns")

    def __init__(self, source: str | None, attrs: dict[str, Any] | None = None,
                 start_ns: int = 0) -> None:
        self.source = source
        self.attrs = attrs
        self.start_ns = start_ns


_AS_RETRIEVED = Choice(None)


def choose(nodes: Sequence[Node], answer: str | None) -> Choice | None:
    """Mark the RETRIEVER / RERANKER nodes among a request's ended ``nodes`` (and its
    open LLM calls) whose passages the answering call was not given; None when the
    request has no passages or no answer."""
    if not answer:
        return None
    groups: list[Node] = []
    calls: list[Node] = []
    for node in nodes:  # one pass: this runs at the end of every request
        attrs = node.attrs
        if attrs is None:
            continue
        if node.role == LLM:
            if node.error is None:
                calls.append(node)
        elif (node.role in (RETRIEVER, POSTPROCESSOR) and node.ended
              and sc.RAGAS_RETRIEVAL_DISCARDED not in attrs):
            groups.append(node)
    if not groups:
        return None
    call = _answering_call(calls, answer.strip(), groups)
    if call is None:
        return Choice(sc.PASSAGES_PROMPT_UNSEEN)
    prompt = _prompt(call.attrs or {})
    if _all_in(groups, call, prompt):
        return _AS_RETRIEVED  # most requests: every passage retrieved is in the prompt
    before = sorted((n for n in groups if n.start_ns < call.start_ns),
                    key=lambda n: n.start_ns)
    texts: list[str] = []
    # Each passage's attributes: the span's, its index and prefix there.
    where: list[tuple[Mapping[str, Any], int, str]] = []
    seen: set[str] = set()
    for node in before:  # a postprocessor's output may be new text (a sentence window)
        prefix = _prefix(node)
        for i, text in enumerate(_contents(node.attrs or {}, prefix)):
            if text not in seen:
                seen.add(text)
                texts.append(text)
                where.append((node.attrs or {}, i, prefix))
    others = [(completion, functools.partial(_prompt, n.attrs or {})) for n in calls
              if n is not call and n.ended and n.end_ns <= call.start_ns
              and type(completion := (n.attrs or {}).get(_prompt_passages.COMPLETION)) is str]
    found = _prompt_passages.shown_through(prompt, others, texts)
    if not found:
        return Choice(sc.PASSAGES_NOT_IN_PROMPT)
    dropped, differs = _prompt_passages.left_out(
        [(n.role == RETRIEVER, _contents(n.attrs or {}, _prefix(n))) for n in before],
        texts, found)
    for i in dropped:
        attrs = before[i].attrs
        if attrs is not None:
            attrs[sc.RAGAS_RETRIEVAL_DISCARDED] = sc.DISCARDED_NOT_IN_PROMPT
    if not differs:
        return Choice(None)
    shown: dict[str, Any] = {RETRIEVAL_DOCUMENTS_TOTAL: len(found)}
    for j, (i, part) in enumerate(found):
        source, k, prefix = where[i]
        for field in _FIELDS:
            value = source.get(sc.document_key(k, field, prefix))
            if value is not None:
                shown[sc.document_key(j, field, sc.RERANKER_OUTPUT_DOCUMENTS)] = value
        shown[sc.document_key(j, sc.DOCUMENT_CONTENT, sc.RERANKER_OUTPUT_DOCUMENTS)] = part
    return Choice(None, shown, call.start_ns)


def _answering_call(calls: Sequence[Node], answer: str, groups: Sequence[Node]) -> Node | None:
    found: Node | None = None
    for node in calls:
        completion = (node.attrs or {}).get(_prompt_passages.COMPLETION)
        if (type(completion) is str and completion.strip() == answer
                and (found is None or node.end_ns > found.end_ns)):
            found = node
    if found is not None:
        return found
    first_end = min(n.end_ns for n in groups)
    for node in calls:
        if node.start_ns >= first_end and (found is None or node.start_ns > found.start_ns):
            found = node
    return found


def _all_in(groups: Sequence[Node], call: Node, prompt: str) -> bool:
    """Whether every group is a retrieval that started before ``call``, each of whose
    passages is in ``prompt`` verbatim."""
    for node in groups:
        attrs = node.attrs
        if node.role != RETRIEVER or node.start_ns >= call.start_ns or attrs is None:
            return False
        for text in _contents(attrs, sc.RETRIEVAL_DOCUMENTS):
            if text not in prompt:
                return False
    return True


def _prefix(node: Node) -> str:
    return sc.RETRIEVAL_DOCUMENTS if node.role == RETRIEVER else sc.RERANKER_OUTPUT_DOCUMENTS


@functools.lru_cache(maxsize=512)
def _content_key(index: int, prefix: str) -> str:
    return sc.document_key(index, sc.DOCUMENT_CONTENT, prefix)


def _contents(attrs: Mapping[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    while type(text := attrs.get(_content_key(len(out), prefix))) is str:
        out.append(text)
    return out


def _prompt(attrs: Mapping[str, Any]) -> str:
    return _prompt_passages.recorded_prompt(attrs, _MAX_MESSAGES)
