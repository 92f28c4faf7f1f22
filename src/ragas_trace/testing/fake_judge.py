"""What the loopback OpenAI server answers to our judge's prompts when a test does
not say otherwise: deterministic, cheap, and sensible enough that good answers score
high and ungrounded or evasive ones low.

- statements: one per answer sentence; none for an evasive or empty answer;
- questions: each answer sentence turned into a question; evasive answers are
  flagged noncommittal;
- context sentences: the numbers of those sharing a content word with the question;
- grounding: the two below in one reply;
- verdicts: a statement is supported when at least 60 % of its content words (or
  CJK character pairs) occur in the context; the evidence is the sentence sharing
  most of them; an unsupported one gets a short reason;
- embeddings: hashed bag of words, CJK characters and character pairs, unit length, so cosine
  similarity follows word overlap.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ragas_trace.judges import prompts
from ragas_trace.judges.prompts import Task
from ragas_trace.metrics.sentences import split_sentences

SUPPORT_THRESHOLD = 0.6
EMBEDDING_DIM = 256

_TAG = re.compile(r"<([a-z_]+)>\n?(.*?)\n?</\1>", re.DOTALL)
_NUMBERED = re.compile(r"^\s*(\d+)\.\s+(.*)$", re.MULTILINE)
_SENTENCE_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_COUNT = re.compile(re.escape(prompts.QUESTION_COUNT_LABEL) + r"\s*(\d+)")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_WORD = re.compile(r"[^\W\d_]{3,}|\d+")
_STOPWORDS = frozenset("""
the and for are was were what which who whom whose when where why how does did
has have had its his her their they them this that these those with from into about
than then there been being also not but can could would should will shall may might
der die das und ist sind war waren ein eine einer eines wer wie was wann warum welche
welcher welches mit von auf für den dem des sich nicht auch
""".split())
_EVASIVE = (
    "don't know", "do not know", "not sure", "cannot answer", "can't answer",
    "no information", "unable to answer", "i cannot say", "weiß nicht", "weiss nicht",
    "keine ahnung", "kann ich nicht sagen", "不知道", "无法回答", "不确定",
)


@dataclass(frozen=True)
class TaskInput:
    """A judge request as the server understood it."""

    task: Task
    question: str
    answer: str
    context: str  # the context's text, its sentences joined
    sentences: tuple[str, ...]  # the numbered context sentences, number i at index i - 1
    statements: tuple[str, ...]
    n_questions: int


def identify(body: Mapping[str, Any]) -> TaskInput | None:
    """The task and inputs of a chat request, or None when it is not one of ours."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return None
    last = messages[-1].get("content") if isinstance(messages[-1], Mapping) else None
    if not isinstance(last, str):
        return None
    tags = {m.group(1): m.group(2) for m in _TAG.finditer(last)}
    task = _schema_task(body.get("response_format")) or _task_from_tags(tags.keys())
    if task is None:
        return None
    count = _COUNT.search(last)
    raw_context = tags.get(prompts.TAG_CONTEXT, "")
    numbered = [m.group(2) for m in _SENTENCE_LINE.finditer(raw_context)]
    return TaskInput(
        task=task,
        question=tags.get(prompts.TAG_QUESTION, ""),
        answer=tags.get(prompts.TAG_ANSWER, ""),
        context=" ".join(numbered) if numbered else raw_context,
        sentences=tuple(numbered),
        statements=tuple(m.group(2).strip() for m in
                         _NUMBERED.finditer(tags.get(prompts.TAG_STATEMENTS, ""))),
        n_questions=int(count.group(1)) if count else 1,
    )


def _schema_task(response_format: Any) -> Task | None:
    if isinstance(response_format, Mapping):
        schema = response_format.get("json_schema")
        if isinstance(schema, Mapping) and schema.get("name") in set(Task):
            return Task(schema["name"])
    return None


def _task_from_tags(tags: Any) -> Task | None:
    names = set(tags)
    if prompts.TAG_STATEMENTS in names:
        return Task.GROUNDING if prompts.TAG_QUESTION in names else Task.VERDICTS
    if prompts.TAG_CONTEXT in names:
        return Task.CONTEXT
    if prompts.TAG_QUESTION in names and prompts.TAG_ANSWER in names:
        return Task.STATEMENTS
    if prompts.TAG_ANSWER in names:
        return Task.QUESTIONS
    return None


def is_evasive(answer: str) -> bool:
    text = answer.lower().replace("’", "'")
    return not text.strip() or any(phrase in text for phrase in _EVASIVE)


def _cjk_bigrams(text: str) -> list[str]:
    """Adjacent CJK character pairs (a lone character stands for itself)."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text):
        out += [a + b for a, b in itertools.pairwise(run)] if len(run) > 1 else [run]
    return out


def content_units(text: str) -> set[str]:
    """Lower-cased content words and CJK character pairs."""
    lowered = text.lower()
    return {w for w in _WORD.findall(lowered) if w not in _STOPWORDS} | set(_cjk_bigrams(lowered))


def default_reply(request: TaskInput) -> dict[str, Any]:
    if request.task is Task.STATEMENTS:
        return {"statements": [] if is_evasive(request.answer)
                else split_sentences(request.answer)}
    if request.task is Task.QUESTIONS:
        sentences = split_sentences(request.answer) or [request.answer.strip() or "?"]
        questions = [sentences[i % len(sentences)].rstrip(".!。！ ") + "?"
                     for i in range(max(1, request.n_questions))]
        return {"questions": questions, "noncommittal": is_evasive(request.answer)}
    sentence_units = [content_units(s) for s in request.sentences]
    if request.task is Task.GROUNDING:
        return {**default_reply(replace(request, task=Task.CONTEXT)),
                **default_reply(replace(request, task=Task.VERDICTS))}
    if request.task is Task.CONTEXT:
        wanted = content_units(request.question)
        kept = [i for i, units in enumerate(sentence_units, 1) if wanted & units]
        return {"sentences": kept, "insufficient_information": not kept}
    context_units = content_units(request.context)
    verdicts = []
    for i, statement in enumerate(request.statements, 1):
        units = content_units(statement)
        share = len(units & context_units) / len(units) if units else 0.0
        supported = share >= SUPPORT_THRESHOLD
        overlaps = [len(units & s) for s in sentence_units]
        best = max(range(len(overlaps)), key=overlaps.__getitem__, default=None)
        evidence = [best + 1] if best is not None and overlaps[best] else []
        verdicts.append({"id": i, "evidence": evidence, "supported": supported,
                         "reason": None if supported
                         else f"Only {share:.0%} of it is in the context."})
    return {"verdicts": verdicts}


def embed(text: str, dim: int = EMBEDDING_DIM) -> np.ndarray:
    """A deterministic unit vector: signed feature hashing of words and CJK bigrams."""
    vector = np.zeros(dim, dtype=np.float32)
    lowered = text.lower()
    features = _WORD.findall(lowered) + _cjk_bigrams(lowered) + _CJK.findall(lowered)
    for feature in features:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dim
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return vector / norm
