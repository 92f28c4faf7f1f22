"""Faithfulness read from the answer as a whole: a copy of the context scores 1 at any
length, one invented sentence pulls a long answer down, and direct answers are
relevant. Our own examples."""

import pytest

from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import Metric

F, AR = Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCE

GUIDE = [
    "The Varnholm ferry line started service in 1958 with two boats.",
    "Its founder, Ingrid Solberg, ran it until 1970.",
    "The crossing to Skarra takes forty minutes in calm weather.",
    "Tickets are sold at the harbour office and on board.",
    "In winter the first boat leaves at seven in the morning.",
    "Bicycles travel free of charge on every crossing.",
]
QUESTION = "What should a visitor know about the Varnholm ferry line?"


@pytest.mark.parametrize("sentences", [1, 2, 3, 4, 5])
def test_an_answer_copied_from_the_context_is_faithful(judge: LocalJudge,
                                                      sentences: int) -> None:
    answer = " ".join(GUIDE[:sentences])
    scores = judge.evaluate_sync(QUESTION, [" ".join(GUIDE)], answer, frozenset({F}))
    value = scores.result(F).value
    assert value is not None and value >= 0.9, scores.result(F)
    assert all(v.supported for v in scores.statements)


def test_one_invented_sentence_pulls_a_long_answer_down(judge: LocalJudge,
                                                        passing: float) -> None:
    context = [" ".join(GUIDE)]
    copied = judge.evaluate_sync(QUESTION, context, " ".join(GUIDE[:5]), frozenset({F}))
    invented = judge.evaluate_sync(
        QUESTION, context, " ".join([*GUIDE[:4], "Since 1994 Nordvik Shipping has "
                                     "charged a surcharge of 12 crowns for dogs."]),
        frozenset({F}))
    copied_value, invented_value = copied.result(F).value, invented.result(F).value
    assert copied_value is not None and invented_value is not None
    assert invented_value < copied_value - 0.1
    assert [v.statement for v in invented.statements if not v.supported] == [
        "Since 1994 Nordvik Shipping has charged a surcharge of 12 crowns for dogs."]


@pytest.mark.parametrize(("question", "answer"), [
    ("How long does the crossing to Skarra take?", "The crossing takes about forty minutes."),
    ("How long does the crossing to Skarra take?", "About forty minutes."),
    ("Do bicycles travel free on the ferry?", "Yes, bicycles travel free of charge."),
    ("Do bicycles pay a fare on the ferry?", "No, bicycles travel free of charge."),
    ("Do bicycles travel free on the ferry?", "Yes."),
    ("Do bicycles pay a fare on the ferry?", "No, they don't."),
    ("Ist die Fahrt für Fahrräder kostenlos?", "Ja."),
    # A sentence whose subject is a pronoun is read in the question's frame too; its
    # own vector, without the subject, is far from the question.
    ("How long does the crossing to Skarra take?", "It takes forty minutes in calm weather."),
    ("When does the first winter boat leave?", "It leaves at seven in the morning."),
    # "Where" is answered by a phrase of place as by a name.
    ("Where are ferry tickets sold?", "Tickets are sold at the harbour office and on board."),
])
def test_a_direct_answer_is_relevant(judge: LocalJudge, question: str, answer: str) -> None:
    scores = judge.evaluate_sync(question, [" ".join(GUIDE)], answer, frozenset({AR}))
    value = scores.result(AR).value
    assert value is not None and value >= judge.thresholds["answer_relevance"], \
        scores.result(AR)


def test_a_sentence_that_refers_back_is_read_with_its_question(judge: LocalJudge) -> None:
    answer = "Its founder, Ingrid Solberg, ran it."
    own, other = (judge.evaluate_sync(q, [], answer, frozenset({AR})).result(AR).value
                  for q in ("Who ran the ferry line until 1970?",
                            "When does the first winter boat leave?"))
    assert own is not None and other is not None and own > other




@pytest.mark.parametrize(("question", "answer"), [
    ("Where are tickets sold?", "It takes forty minutes in calm weather."),
    ("When does the first winter boat leave?", "Bicycles travel free of charge on every crossing."),
])
def test_a_sentence_that_answers_another_question_is_not_relevant(
        judge: LocalJudge, question: str, answer: str) -> None:
    scores = judge.evaluate_sync(question, [" ".join(GUIDE)], answer, frozenset({AR}))
    value = scores.result(AR).value
    assert value is not None and value < judge.thresholds["answer_relevance"], \
        scores.result(AR)


LISTED = """Here is what a visitor should know about the Varnholm ferry line:
1. The line started service in 1958, and some of its boats are old.
2. The crossing to Skarra takes forty minutes in calm weather.
3. Tickets are sold at the harbour office; many visitors buy them on board.
4. In winter the first boat leaves at seven in the morning.
5. Bicycles travel free of charge, and some cafés near the pier rent them."""
PLAIN = ("The line started service in 1958. The crossing to Skarra takes forty minutes in "
         "calm weather. Tickets are sold at the harbour office. In winter the first boat "
         "leaves at seven in the morning. Bicycles travel free of charge.")


def test_a_long_answer_is_not_made_irrelevant_by_its_count_of_details(
        judge: LocalJudge) -> None:
    # A real answer's numbered list and its "some" and "many" are not each a sign of
    # evasion: counted per statement, not per word, they cost the list little against
    # the same facts in plain sentences (each word counted: 0.21 of it).
    context = [" ".join(GUIDE)]
    plain = judge.evaluate_sync(QUESTION, context, PLAIN, frozenset({AR})).result(AR).value
    listed = judge.evaluate_sync(QUESTION, context, LISTED, frozenset({AR})).result(AR)
    assert plain is not None and listed.value is not None
    assert listed.value >= 0.8 * plain, (listed, plain)
