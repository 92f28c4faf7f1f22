"""Which of a request's retrievals its answer was not generated from, decided when the
root run ends without error:

- a retrieval made inside a step or tool that raised (``failed``): a whole-chain
  fallback's failed attempt, a retried node, a tool that failed after searching.
- a retrieval a later one replaced in the answering model's prompt: the Agentic RAG
  loop (grade "no", rewrite, retrieve again, answer from the latest tool message), a
  state key overwritten by a second retrieval. The answering call is the latest model
  call whose completion is the request's answer. A retrieval is replaced when a later
  retrieval reached that prompt (one of its passages is in the prompt's text) and each
  of its own passages that is in the prompt came with a later retrieval too. An app
  that pastes several retrievals into one prompt keeps them all (each reached it);
  when no passage is found in the prompt (reworded passages, an answer no model call
  wrote as is), all stay, as before.

Their spans stay, marked ``ragas.retrieval.discarded`` with the reason, so that a
reader still sees what was retrieved; ``extract`` leaves their passages out of the
record. This runs once per request, off the callbacks of the chain's steps; the prompt
is searched here only when the request has two retrievals or more. Which passages of
the retrievals kept reached the prompt is ``_in_prompt``'s to decide, after this."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ragas_trace import semconv as sc
from ragas_trace.collectors.langchain import _in_prompt
from ragas_trace.collectors.langchain._runs import Run

# A passage counts as in the prompt when its first characters are: apps cut long
# passages to fit the prompt.
_PROBE_CHARS = 200


def is_failure(error: BaseException) -> bool:
    """An error that ends an attempt; not a stream's consumer stopping, a cancellation,
    or LangGraph's control flow (``interrupt()``, ``Command(graph=Command.PARENT)``),
    which it raises as ``GraphBubbleUp``."""
    if isinstance(error, GeneratorExit | asyncio.CancelledError):
        return False
    return not any(c.__name__ == "GraphBubbleUp" for c in type(error).__mro__)


def mark(children: Sequence[Run], failed: set[int] | None, answer: str | None) -> bool:
    """Mark (``ragas.retrieval.discarded``) the retrieval and reranker runs among a
    request's ``children`` that its ``answer`` was not generated from; whether any."""
    retrievals = [r for r in children if r.documents is not None and r.end_ns is not None]
    if len(retrievals) < 2 and not failed:
        return False  # most requests: one retrieval, nothing failed
    marked = False
    if failed:
        for run in retrievals:
            if not failed.isdisjoint(run.lineage):
                run.attrs[sc.RAGAS_RETRIEVAL_DISCARDED] = sc.DISCARDED_FAILED_ATTEMPT
                marked = True
    if answer and sum(1 for r in retrievals if _kept_retriever(r)) >= 2:
        marked |= _mark_superseded(children, retrievals, answer.strip())
    return marked


def texts(run: Run) -> list[str]:
    """The texts of the passages a retrieval run returned (or a reranker kept)."""
    out = []
    for doc in run.documents or ():
        text = getattr(doc, "page_content", doc)
        if type(text) is str:
            out.append(text)
    return out


def _kept_retriever(run: Run) -> bool:
    return (run.attrs.get(sc.SPAN_KIND) == sc.KIND_RETRIEVER
            and sc.RAGAS_RETRIEVAL_DISCARDED not in run.attrs)


def _mark_superseded(children: Sequence[Run], retrievals: list[Run], answer: str) -> bool:
    call = _in_prompt.answering_call(_in_prompt.model_calls(children), answer)
    if call is None:
        return False
    prompt = _in_prompt.prompt_text(call)
    before = sorted((r for r in retrievals if sc.RAGAS_RETRIEVAL_DISCARDED not in r.attrs
                     and r.start_ns < call.start_ns), key=lambda r: r.start_ns)
    later: set[str] = set()  # the passages of the later retrievals kept
    later_reached = False
    marked = False
    for run in reversed(before):
        passages = texts(run)
        reached = {t for t in passages if _probed(t, prompt)}
        if later_reached and reached <= later:
            run.attrs[sc.RAGAS_RETRIEVAL_DISCARDED] = sc.DISCARDED_SUPERSEDED
            marked = True
        elif run.attrs.get(sc.SPAN_KIND) == sc.KIND_RETRIEVER:
            # A reranker's passages are a part of an earlier retrieval's: it replaces
            # none.
            later.update(passages)
            later_reached |= bool(reached)
    return marked


def _probed(text: str, prompt: str) -> bool:
    probe = text.strip()[:_PROBE_CHARS]
    return bool(probe) and probe in prompt
