"""What real LLM answers wrap their statements in (preambles, closings, citations,
markdown, hedges, sentences about the passages) is not judged as statements; JSON
passages are read field by field; a time on the 12-hour clock is not an invented
one; a short answer linked to the question through the context is supported.
Examples written here."""

from __future__ import annotations

import json

import pytest

from ragas_trace.judges.local import LocalJudge
from ragas_trace.judges.local.normalise import flatten_passage, yes_no_field
from ragas_trace.judges.local.numbers import same_clock
from ragas_trace.judges.local.statements import answer_parts
from ragas_trace.results import Metric, MetricStatus

F = Metric.FAITHFULNESS
CONTEXT = ("The Orrin lighthouse stands on a granite spur north of the harbour. It was "
           "designed by the engineer Maud Keswick and first lit in 1879. A keeper lived "
           "there until 1961.")
QUESTION = "Who designed the Orrin lighthouse, and when was it first lit?"
BARE = "The Orrin lighthouse was designed by Maud Keswick. It was first lit in 1879."


@pytest.mark.parametrize("wrapped", [
    "Based on the provided passages, here is the answer: the Orrin lighthouse was designed "
    "by Maud Keswick [1]. It was first lit in 1879 [1]. I hope this helps!",
    "Sure! Here's what the context says:\n\n**Design:**\n- The Orrin lighthouse was "
    "designed by Maud Keswick (Passage 1).\n- It was first lit in 1879.\n\nLet me know if "
    "you have any other questions.",
    "According to passage 1, the Orrin lighthouse was designed by Maud Keswick. Passage 1 "
    "says that it was first lit in 1879. The passages do not mention who built it.",
])
def test_the_wrapping_of_an_answer_is_not_judged(
        judge: LocalJudge, passing: float, wrapped: str) -> None:
    bare = judge.evaluate_sync(QUESTION, [CONTEXT], BARE, frozenset({F}))
    scores = judge.evaluate_sync(QUESTION, [CONTEXT], wrapped, frozenset({F}))
    assert [v.statement for v in scores.statements] == [v.statement for v in bare.statements] \
        or len(scores.statements) == 2, scores.statements
    assert all(v.supported for v in scores.statements), scores.statements
    assert scores.faithfulness is not None and scores.faithfulness >= passing, scores


def test_answer_parts_drop_meta_sentences_and_keep_hedged_facts() -> None:
    parts = answer_parts("Sure, here are some facts: it opened in 1889. I'm not certain, "
                         "but it was built by Gustave Eiffel's company. Hope this helps!")
    assert parts.statements == ["It opened in 1889.",
                                "It was built by Gustave Eiffel's company."]
    assert not parts.evasive
    assert answer_parts("According to my sources, it opened in 1889.").statements == [
        "It opened in 1889."]
    evasive = answer_parts("I'm not sure. The passages do not say when it opened.")
    assert evasive.statements == [] and evasive.evasive


def test_a_substantive_answer_with_a_hedge_is_not_a_refusal(
        judge: LocalJudge, passing: float) -> None:
    scores = judge.evaluate_sync(QUESTION, [CONTEXT], "I'm not entirely certain, but it was "
                                 "designed by Maud Keswick and first lit in 1879.")
    assert scores.result(F).status is MetricStatus.SCORED
    assert scores.faithfulness is not None and scores.faithfulness >= passing, scores
    assert scores.answer_relevance is not None and scores.answer_relevance > 0.0


def test_an_answer_saying_the_passages_lack_the_fact_is_a_refusal(judge: LocalJudge) -> None:
    scores = judge.evaluate_sync(QUESTION, [CONTEXT], "The provided passages do not "
                                 "mention who designed the lighthouse.")
    assert scores.result(F).status is MetricStatus.NO_STATEMENTS
    assert scores.answer_relevance == 0.0


RECORD = {"name": "Harbour Lights Café", "city": "Orrin",
          "hours": {"Monday": "17:0-21:0", "Sunday": "9:0-14:0"},
          "attributes": {"OutdoorSeating": False, "WiFi": "free",
                         "RestaurantsReservations": True}}


def test_a_json_passage_is_read_as_fields() -> None:
    text = flatten_passage(json.dumps(RECORD))
    assert "hours / Monday: 17:0-21:0." in text.splitlines()
    assert "attributes / Outdoor Seating: no." in text.splitlines()
    assert yes_no_field("attributes / Outdoor Seating: no.") == ("Outdoor Seating", False)
    assert flatten_passage("{not json") == "{not json"
    # Two halves of two letters are one word; a longer half is a word of its own.
    assert "attributes / WiFi: free." in text.splitlines()
    assert flatten_passage('{"ByAppointmentOnly": true}') == "By Appointment Only: yes."


def test_a_time_on_the_12_hour_clock_is_the_records_24_hour_time(
        judge: LocalJudge, passing: float) -> None:
    # "AM" and "PM" after a time are part of it, not names the record lacks; "Wi-Fi"
    # is the record's "WiFi".
    scores = judge.evaluate_sync(
        "Write an overview of this business from its record.", [json.dumps(RECORD)],
        "On Mondays Harbour Lights Café is open from 5:00 PM to 9:00 PM. It offers "
        "free Wi-Fi.", frozenset({F}))
    for verdict in scores.statements:
        assert "not in the context" not in verdict.reason, scores.statements
    assert scores.faithfulness is not None and scores.faithfulness >= passing, scores


@pytest.mark.parametrize(("answer", "contradicted"), [
    ("Harbour Lights Café in Orrin offers outdoor seating and free WiFi.", "outdoor seat: no"),
    ("Harbour Lights Café does not take reservations.", "restaurant reserv: yes"),
])
def test_a_statement_against_a_yes_no_field_names_it(
        judge: LocalJudge, passing: float, answer: str, contradicted: str) -> None:
    context = [json.dumps(RECORD)]
    question = "Write an overview of this business from its record."
    right = judge.evaluate_sync(question, context, "Harbour Lights Café in Orrin has free "
                                "WiFi and takes reservations.", frozenset({F}))
    wrong = judge.evaluate_sync(question, context, answer, frozenset({F}))
    assert contradicted in wrong.statements[0].reason, wrong.statements
    assert "fields say otherwise" not in right.statements[0].reason, right.statements
    assert right.faithfulness is not None and right.faithfulness >= passing, right


def test_a_time_on_the_12_hour_clock_is_the_records_24_hour_one() -> None:
    assert same_clock("5:00", {17, 0, 21})  # 5 pm on a 24-hour record
    assert not same_clock("11:30", {17, 0})


def test_a_multi_hop_span_of_the_context_is_supported(judge: LocalJudge, passing: float) -> None:
    context = ["Jan Vermeer (born 1962 in Leeuwarden) is a Dutch former footballer who "
               "played for Heerenveen. Leeuwarden is the capital of Friesland and has a "
               "population of 108,249."]
    question = ("What is the population of the city where the footballer Jan Vermeer was "
                "born?")
    right = judge.evaluate_sync(question, context, "108,249", frozenset({F}))
    invented = judge.evaluate_sync(question, context, "95,400", frozenset({F}))
    assert right.faithfulness is not None and right.faithfulness >= passing, right
    assert invented.faithfulness is not None and invented.faithfulness < passing, invented
