"""Directions the local judge's scores must move in (issue 53, item 5), over the demo's
development passages (``ragas_trace.demo.corpus``: a made-up town, so no score can
lean on world knowledge), through the public ``LocalJudge.evaluate_sync``.

Invariances (the score stays put): the order of the passages; answer relevance when
only the passages change; context relevance when only the answer changes; a passage
given twice. Directions: an unrelated passage added does not lower a verbatim
answer's faithfulness; a number or a name swapped for one the context lacks, or a
statement negated, lowers it; verbatim answers of one to five sentences score >= 0.9.

Few examples each: every one is two or three judge calls.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragas_trace.demo.corpus import PASSAGES, PEOPLE, PLACES, QUESTIONS, Passage
from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import Scores

pytestmark = pytest.mark.usefixtures("no_internal_errors")

SAME = 1e-6  # what "does not change" allows: float noise, not a judgement
FEW = settings(max_examples=25, deadline=None)
BY_ID = {p.id: p for p in PASSAGES}
_NUMBER = re.compile(r"\b\d[\d,]*\b")
_NEGATABLE = re.compile(r"\b(was|is|are|were)\b")


def sentences(passage: Passage) -> list[str]:
    return re.split(r"(?<=\.)\s+", passage.text)


def triple(scores: Scores) -> tuple[float | None, float | None, float | None]:
    return scores.faithfulness, scores.answer_relevance, scores.context_relevance


def faithfulness(scores: Scores) -> float:
    assert scores.faithfulness is not None, scores
    return scores.faithfulness


@st.composite
def records(draw: st.DrawFn, others: int = 3) -> tuple[str, Passage, list[Passage], str]:
    """A question, the passage that answers it, 0..``others`` other passages, and a
    verbatim answer: one to three sentences of the answering passage, in order."""
    question = draw(st.sampled_from(QUESTIONS))
    passage = BY_ID[question.passage_id]
    rest = draw(st.lists(st.sampled_from([p for p in PASSAGES if p is not passage]),
                         max_size=others, unique=True))
    own = sentences(passage)
    picked = draw(st.lists(st.sampled_from(range(len(own))), min_size=1, unique=True))
    return question.text, passage, rest, " ".join(own[i] for i in sorted(picked))


@given(records(), st.data())
@FEW
def test_the_order_of_the_passages_changes_no_score(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        data: st.DataObject) -> None:
    question, passage, rest, answer = record
    contexts = [p.text for p in [passage, *rest]]
    shuffled = data.draw(st.permutations(contexts))
    assume(shuffled != contexts)
    first = triple(judge.evaluate_sync(question, contexts, answer))
    second = triple(judge.evaluate_sync(question, shuffled, answer))
    assert second == pytest.approx(first, abs=SAME)


@given(records(), st.sampled_from(PASSAGES))
@FEW
def test_answer_relevance_does_not_change_when_the_passages_change(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        unrelated: Passage) -> None:
    question, passage, _, answer = record
    assume(unrelated is not passage)
    supporting = judge.evaluate_sync(question, [passage.text], answer).answer_relevance
    elsewhere = judge.evaluate_sync(question, [unrelated.text], answer).answer_relevance
    assert elsewhere == pytest.approx(supporting, abs=SAME)


@given(records(), st.sampled_from(PASSAGES))
@FEW
def test_context_relevance_does_not_change_when_the_answer_changes(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        other: Passage) -> None:
    question, passage, rest, answer = record
    contexts = [p.text for p in [passage, *rest]]
    right = judge.evaluate_sync(question, contexts, answer).context_relevance
    wrong = judge.evaluate_sync(question, contexts, sentences(other)[0]).context_relevance
    assert wrong == pytest.approx(right, abs=SAME)


@given(records(), st.sampled_from(PASSAGES))
@FEW
def test_an_unrelated_passage_does_not_lower_a_verbatim_answer(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        unrelated: Passage) -> None:
    question, passage, rest, answer = record
    assume(unrelated is not passage and unrelated not in rest)
    contexts = [p.text for p in [passage, *rest]]
    before = faithfulness(judge.evaluate_sync(question, contexts, answer))
    after = faithfulness(judge.evaluate_sync(question, [*contexts, unrelated.text], answer))
    assert after >= before - SAME


@given(records(), st.data())
@FEW
def test_a_passage_given_twice_changes_nothing(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        data: st.DataObject) -> None:
    question, passage, rest, answer = record
    contexts = [p.text for p in [passage, *rest]]
    twice = data.draw(st.sampled_from(contexts))
    once = triple(judge.evaluate_sync(question, contexts, answer))
    doubled = triple(judge.evaluate_sync(question, [*contexts, twice], answer))
    assert doubled == pytest.approx(once, abs=SAME)


def _supported(judge: LocalJudge, question: str, contexts: list[str], answer: str) -> float:
    """Faithfulness of an answer the test builds as supported; it must be (>= 0.9)."""
    score = faithfulness(judge.evaluate_sync(question, contexts, answer))
    assert score >= 0.9, (answer, score)
    return score


@st.composite
def sentences_with(draw: st.DrawFn, pattern: re.Pattern[str]
                   ) -> tuple[str, Passage, list[Passage], str]:
    """A record whose answer is one sentence of its passage that ``pattern`` matches."""
    question, passage, rest, _ = draw(records(others=2))
    own = [s for s in sentences(passage) if pattern.search(s)]
    assume(own)
    return question, passage, rest, draw(st.sampled_from(own))


@given(sentences_with(_NUMBER), st.integers(2, 97))
@FEW
def test_a_number_the_context_lacks_lowers_faithfulness(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        shift: int) -> None:
    question, passage, rest, answer = record
    contexts = [p.text for p in [passage, *rest]]
    number = _NUMBER.search(answer)
    assert number is not None
    value = int(number.group().replace(",", "")) + shift
    new = f"{value:,}" if "," in number.group() else str(value)
    assume(all(new not in c for c in contexts))
    changed = answer[:number.start()] + new + answer[number.end():]
    before = _supported(judge, question, contexts, answer)
    assert faithfulness(judge.evaluate_sync(question, contexts, changed)) < before


_NAMES = re.compile("|".join(re.escape(n) for n in PEOPLE + PLACES))


@given(sentences_with(_NAMES), st.sampled_from(PEOPLE + PLACES))
@FEW
def test_a_name_the_context_lacks_lowers_faithfulness(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str],
        new: str) -> None:
    question, passage, rest, answer = record
    contexts = [p.text for p in [passage, *rest]]
    assume(all(new not in c and new.split()[-1] not in c for c in contexts))
    name = _NAMES.search(answer)
    assert name is not None
    changed = answer[:name.start()] + new + answer[name.end():]
    before = _supported(judge, question, contexts, answer)
    assert faithfulness(judge.evaluate_sync(question, contexts, changed)) < before


@given(sentences_with(_NEGATABLE))
@FEW
def test_a_negated_statement_lowers_faithfulness(
        judge: LocalJudge, record: tuple[str, Passage, list[Passage], str]) -> None:
    question, passage, rest, answer = record
    contexts = [p.text for p in [passage, *rest]]
    negated = _NEGATABLE.sub(r"\1 not", answer, count=1)
    before = _supported(judge, question, contexts, answer)
    assert faithfulness(judge.evaluate_sync(question, contexts, negated)) < before


@given(st.lists(st.sampled_from(PASSAGES), min_size=1, max_size=2, unique=True),
       st.sampled_from(PASSAGES), st.data())
@FEW
def test_verbatim_answers_of_one_to_five_sentences_score_at_least_0_9(
        judge: LocalJudge, sources: list[Passage], unrelated: Passage,
        data: st.DataObject) -> None:
    pool = [s for p in sources for s in sentences(p)]
    count = data.draw(st.integers(1, min(5, len(pool))))
    picked = sorted(data.draw(st.lists(st.sampled_from(range(len(pool))), min_size=count,
                                       max_size=count, unique=True)))
    answer = " ".join(pool[i] for i in picked)
    question = next(q.text for q in QUESTIONS if q.passage_id == sources[0].id)
    contexts = [p.text for p in sources] + ([unrelated.text] if unrelated not in sources
                                            else [])
    _supported(judge, question, contexts, answer)
