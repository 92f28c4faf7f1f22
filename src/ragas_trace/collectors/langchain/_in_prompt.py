"""The passages of a request that reached its answering model's input, decided when
the root run ends without error, however many retrievals it made and whatever code
(a ``@chain`` function, a ``RunnableLambda``, a graph node, a token budget, a cut of
one passage) stood between them and the prompt (``_prompt_passages`` finds them).

The answering call is the latest model call whose completion is the request's
answer, else the latest model call that started after a retrieval ended. Its
prompt is read from the messages it was given (all of them, not only those its span
records). A retrieval or reranker before it none of whose passages is in the prompt
is marked ``ragas.retrieval.discarded = not_in_prompt``; when the prompt shows fewer
passages than the rest retrieved, or a part of one, a RERANKER span under the root
holds what it shows (``extract`` then scores those). Where that input was not seen (a
model without callbacks) or holds none of the passages verbatim (reworded, an answer
no model call wrote), every passage retrieved counts, and the root says why
(``ragas.passages.source``)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from ragas_trace import semconv as sc
from ragas_trace.collectors import _prompt_passages
from ragas_trace.collectors.langchain import _messages
from ragas_trace.collectors.langchain._runs import Run
from ragas_trace.collectors.langchain._span_attributes import MAX_MESSAGES


class Choice:
    """What ``choose`` decided: why every passage counts (``source``, None when not
    so), and the passages the prompt
    shows when a RERANKER span must say so (``shown``, with the call's start)."""

    __slots__ = ("marked", "shown", "source", "start_ns")

    def __init__(self, source: str | None, shown: list[Any] | None = None, start_ns: int = 0,
                 marked: bool = False) -> None:
        self.source = source
        self.shown = shown
        self.start_ns = start_ns
        # Whether a retrieval was marked ``not_in_prompt``.
        self.marked = marked


_AS_RETRIEVED = Choice(None)


def choose(children: Sequence[Run], answer: str | None) -> Choice | None:
    """Mark the retrievals and rerankers among a request's ``children`` whose passages
    the answering call was not given; None when the request has no passages."""
    if not answer:
        return None
    retrievals: list[Run] = []
    calls: list[Run] = []
    for run in children:  # one pass: this runs at the end of every request
        if run.documents is not None:
            if run.end_ns is not None and sc.RAGAS_RETRIEVAL_DISCARDED not in run.attrs:
                retrievals.append(run)
        elif run.error is None and run.attrs.get(sc.SPAN_KIND) == sc.KIND_LLM:
            # Still open when a stream's consumer stopped early: its prompt is known.
            calls.append(run)
    if not retrievals:
        return None
    call = answering_call(calls, answer.strip(), retrievals)
    if call is None:
        return Choice(sc.PASSAGES_PROMPT_UNSEEN)
    if _all_in(retrievals, call):
        return _AS_RETRIEVED  # most requests: every passage retrieved is in the prompt
    before = [r for r in retrievals if r.start_ns < call.start_ns]
    docs: list[Any] = []
    texts: list[str] = []
    seen: set[str] = set()
    for run in before:
        for doc in run.documents or ():
            text = _text(doc)
            if text is not None and text not in seen:
                seen.add(text)
                docs.append(doc)
                texts.append(text)
    prompt = prompt_text(call)
    others = [(completion, functools.partial(prompt_text, r)) for r in calls
              if r is not call and r.end_ns is not None and r.end_ns <= call.start_ns
              and type(completion := r.attrs.get(_prompt_passages.COMPLETION)) is str]
    found = _prompt_passages.shown_through(prompt, others, texts)
    if not found:
        return Choice(sc.PASSAGES_NOT_IN_PROMPT)
    before.sort(key=lambda r: r.start_ns)
    dropped, differs = _prompt_passages.left_out(
        [(r.attrs.get(sc.SPAN_KIND) == sc.KIND_RETRIEVER,
          [t for t in map(_text, r.documents or ()) if t is not None]) for r in before],
        texts, found)
    for i in dropped:
        before[i].attrs[sc.RAGAS_RETRIEVAL_DISCARDED] = sc.DISCARDED_NOT_IN_PROMPT
    if differs:
        return Choice(None, [_part(docs[i], part) for i, part in found],
                      call.start_ns, bool(dropped))
    return Choice(None, marked=bool(dropped))


def answering_call(calls: Sequence[Run], answer: str,
                   retrievals: Sequence[Run] = ()) -> Run | None:
    """Of the ended model ``calls``, the latest that ended with ``answer`` as its
    completion; else the latest that started after one of ``retrievals`` ended."""
    found: Run | None = None
    for run in calls:
        completion: Any = run.attrs.get(_prompt_passages.COMPLETION)
        if (type(completion) is str and completion.strip() == answer
                and (found is None or (run.end_ns or 0) > (found.end_ns or 0))):
            found = run
    if found is not None or not retrievals:
        return found
    first_end = min(r.end_ns or 0 for r in retrievals)
    for run in calls:
        if run.start_ns >= first_end and (found is None or (run.end_ns or 0) > (found.end_ns or 0)):
            found = run
    return found


def model_calls(children: Sequence[Run]) -> list[Run]:
    """The model calls among a request's runs that ended without error."""
    return [r for r in children if r.end_ns is not None and r.error is None
            and r.attrs.get(sc.SPAN_KIND) == sc.KIND_LLM]


def _all_in(retrievals: Sequence[Run], call: Run) -> bool:
    """Whether every retrieval started before ``call`` and every passage of each is,
    verbatim, in the messages its span records."""
    prompt = _prompt_passages.recorded_prompt(call.attrs, MAX_MESSAGES)
    for run in retrievals:
        if run.start_ns >= call.start_ns or run.attrs.get(sc.SPAN_KIND) != sc.KIND_RETRIEVER:
            return False
        for doc in run.documents or ():
            text = doc.page_content if type(doc) is Document else _text(doc)
            if text is None or text not in prompt:
                return False
    return True


def prompt_text(call: Run) -> str:
    """The text of every message a model call was given."""
    texts = [_messages.text_of(m) for m in _messages.prompt_messages(call.prompt)]
    return "\n".join(t for t in texts if t)


def _text(doc: Any) -> str | None:
    text = getattr(doc, "page_content", doc)
    return text if type(text) is str else None


def _part(doc: Any, part: str) -> Any:
    """``doc`` with only the ``part`` of its text that the prompt shows."""
    if part is _text(doc):
        return doc
    if isinstance(doc, Document):
        return Document(page_content=part, metadata=doc.metadata, id=doc.id)
    return part
