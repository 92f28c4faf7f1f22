"""Server-side answers to Ragas 0.4.3's prompts (legacy metrics: Faithfulness,
AnswerRelevancy, nv ContextRelevance), for the loopback server in
``judge_cost.py``. They follow the same rules as our fake judge (one statement per
answer sentence, verdicts by word overlap, questions from the answer), so that the
two sides differ only in what their prompts and replies cost."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.testing import fake_judge

_INPUT_MARK = "Now perform the same with the following input\ninput: "


def reply(body: Mapping[str, Any]) -> str | None:
    """Reply content for a Ragas request, or None when it is not one."""
    messages = body.get("messages") or []
    text = "\n".join(m.get("content", "") for m in messages
                     if isinstance(m, Mapping) and isinstance(m.get("content"), str))
    if "the Relevance score is" in text:
        return "2"  # nv ContextRelevance: a bare rating
    at = text.rfind(_INPUT_MARK)
    if at < 0:
        return None
    raw = text[at + len(_INPUT_MARK):]
    raw = raw[: raw.rfind("Output:")].strip()
    data = json.loads(raw)
    if {"question", "answer"} <= data.keys():
        return json.dumps({"statements": split_sentences(data["answer"])})
    if {"context", "statements"} <= data.keys():
        context = fake_judge.content_units(data["context"])
        verdicts = []
        for statement in data["statements"]:
            units = fake_judge.content_units(statement)
            share = len(units & context) / len(units) if units else 0.0
            verdicts.append({"statement": statement,
                             "reason": f"{share:.0%} of its words are in the context.",
                             "verdict": int(share >= fake_judge.SUPPORT_THRESHOLD)})
        return json.dumps({"statements": verdicts})
    if "response" in data:
        sentences = split_sentences(data["response"]) or [data["response"]]
        return json.dumps({"question": sentences[0].rstrip(".!。！ ") + "?",
                           "noncommittal": int(fake_judge.is_evasive(data["response"]))})
    return None
