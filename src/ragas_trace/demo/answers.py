"""Answer text for the scripted model: restate the passage sentence that best matches
the question, falsify its facts (dates, names, numbers) to hallucinate, or evade."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from ragas_trace.demo.corpus import MONTHS, PEOPLE, PLACES, WEEKDAYS
from ragas_trace.demo.retriever import terms
from ragas_trace.metrics.sentences import split_sentences

_EVASIONS = (
    "That is hard to say without more information.",
    "I would rather not guess; it depends on many factors.",
    "There are several ways to look at that, and opinions differ.",
    "I could not find anything definite about that.",
    "It is difficult to give a precise answer to such a question.",
)
_NUMBER_WORDS = ("two", "three", "four", "five", "seven", "nine", "eleven", "twenty",
                 "fifty")
_YEAR = r"\b1[0-9]{3}\b|\b20[0-9]{2}\b"
_NUMBER = r"\b[0-9]{1,3}(?:,[0-9]{3})+\b|\b[0-9]+\b"
_FACT = re.compile("|".join([
    rf"(?P<year>{_YEAR})",
    rf"(?P<number>{_NUMBER})",
    r"(?P<person>" + "|".join(map(re.escape, PEOPLE)) + ")",
    r"(?P<place>" + "|".join(map(re.escape, PLACES)) + ")",
    r"(?P<month>\b(?:" + "|".join(MONTHS) + r")\b)",
    r"(?P<weekday>\b(?:" + "|".join(WEEKDAYS) + r")\b)",
    r"(?P<word>\b(?:" + "|".join(_NUMBER_WORDS) + r")\b)",
]))


def best_sentences(question: str, contexts: Sequence[str]) -> list[str]:
    """The sentences of one passage that share the most question terms with it, in
    passage order; ties between passages go to the earlier (higher-ranked) one."""
    wanted = set(terms(question))
    best: tuple[int, int] = (0, -1)  # (overlap, passage index)
    per_passage = [split_sentences(text) for text in contexts]
    for index, sentences in enumerate(per_passage):
        for sentence in sentences:
            overlap = len(wanted & set(terms(sentence)))
            if overlap > best[0]:
                best = (overlap, index)
    overlap, index = best
    if index < 0:
        return []
    return [s for s in per_passage[index] if len(wanted & set(terms(s))) == overlap]


def grounded_answer(question: str, contexts: Sequence[str], rng: random.Random) -> str:
    """The best matching sentences restated verbatim, sometimes with the sentence that
    follows them in the passage (answers vary in length, as real ones do)."""
    sentences = best_sentences(question, contexts)
    if not sentences:
        return "The provided passages do not say."
    if rng.random() < 0.3:
        for text in contexts:
            passage = split_sentences(text)
            if sentences[-1] in passage:
                sentences += passage[passage.index(sentences[-1]) + 1:][:1]
                break
    return " ".join(sentences)


def hallucinate(text: str, rng: random.Random) -> str:
    """``text`` with every date, name and number replaced by a plausible wrong one.

    A sentence without any such fact gets an invented, confidently stated one.
    """
    changed, count = _FACT.subn(lambda m: _falsify(m, rng), text)
    if count:
        return changed
    return f"{text} This was first recorded in {rng.randint(1600, 1990)} by {rng.choice(PEOPLE)}."


def evasive_answer(rng: random.Random) -> str:
    return rng.choice(_EVASIONS)


def _falsify(match: re.Match[str], rng: random.Random) -> str:
    kind = match.lastgroup
    value = match.group()
    if kind == "year":
        return str(int(value) + rng.choice((-1, 1)) * rng.randint(7, 80))
    if kind == "number":
        n = int(value.replace(",", ""))
        wrong = max(1, round(n * rng.choice((0.3, 0.5, 1.7, 2.4, 3.0))))
        wrong = wrong if wrong != n else n + rng.randint(1, 9)
        return f"{wrong:,}" if "," in value else str(wrong)
    pools = {"person": PEOPLE, "place": PLACES, "month": MONTHS, "weekday": WEEKDAYS,
             "word": _NUMBER_WORDS}
    pool = [p for p in pools[kind or "word"] if p != value]
    return rng.choice(pool)
