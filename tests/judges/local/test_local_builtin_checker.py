"""The built-in checker behind the ``Checker`` protocol, as the ONNX checker is: one
``Check`` per statement from the statements and their windows alone, carrying the
measurements the fitted combination reads; and the statements stage's ``Statement``
saying how each is read. Examples written here."""

from __future__ import annotations

import math

import pytest

from ragas_trace.judges.local import LocalJudge
from ragas_trace.judges.local.builtin_checker import BuiltinChecker
from ragas_trace.judges.local.checker import Checker, Statement
from ragas_trace.judges.local.features import STATEMENT_FEATURES
from ragas_trace.judges.local.framing import SHORT_FEATURES
from ragas_trace.judges.local.judge import _Record
from ragas_trace.judges.local.statements import read_answer
from ragas_trace.judges.local.windows import windows
from ragas_trace.results import Metric

CONTEXT = ("The Orrin lighthouse stands on a granite spur north of the harbour. It was "
           "designed by the engineer Maud Keswick and first lit in 1879.")
F = frozenset({Metric.FAITHFULNESS})


def _checked(judge: LocalJudge, question: str, answer: str) -> list[tuple[str, float, bool]]:
    record = _Record(judge._embedder, question, [CONTEXT], answer, F)
    context = record._prepare()
    checks = BuiltinChecker().check(record.statements, [
        windows(record.windows[s.text], context) for s in record.statements])
    return [(s.text, c.probability, bool(c.features))
            for s, c in zip(record.statements, checks, strict=True)]


def test_the_built_in_checker_is_a_checker() -> None:
    assert isinstance(BuiltinChecker(), Checker)
    with pytest.raises(ValueError, match="window lists"):
        BuiltinChecker().check(read_answer("", "It was lit in 1879.").statements, [])


def test_each_statement_gets_its_own_check_with_what_was_measured(judge: LocalJudge) -> None:
    checked = _checked(judge, "", "The lighthouse was first lit in 1879. Its keeper was "
                                  "Oskar Lind.")
    assert [c[0] for c in checked] == ["The lighthouse was first lit in 1879.",
                                       "Its keeper was Oskar Lind."]
    assert all(has for _, _, has in checked)
    assert checked[0][1] > checked[1][1]  # "Oskar Lind" is not in the context


def test_a_short_answer_is_checked_in_its_questions_frame(judge: LocalJudge) -> None:
    reading = read_answer("Who designed the lighthouse?", "Maud Keswick")
    (statement,) = reading.statements
    assert statement.short and statement.answer == "Maud Keswick"
    assert statement.text == "Who designed the lighthouse: Maud Keswick"
    record = _Record(judge._embedder, "Who designed the lighthouse?", [CONTEXT],
                     "Maud Keswick", F)
    features, _ = _measured(record)
    assert set(features) == set(SHORT_FEATURES)


def test_a_sentence_opening_on_a_pronoun_is_embedded_with_its_question() -> None:
    reading = read_answer("When was the lighthouse first lit?", "It was first lit in 1879.")
    assert reading.statements[0].read_as == "When was the lighthouse first lit: It was " \
                                            "first lit in 1879."
    assert not reading.statements[0].short
    assert read_answer("", "It was first lit in 1879.").statements[0].read_as == ""


def test_a_refusal_declines_and_states_nothing() -> None:
    reading = read_answer("Who designed it?", "I don't know.")
    assert reading.declines and reading.statements == ()


def test_a_short_answer_without_a_content_word_gives_nothing_to_check(
        judge: LocalJudge) -> None:
    question = "Who designed the lighthouse?"
    record = _Record(judge._embedder, question, [CONTEXT], "Maud Keswick", F)
    context = record._prepare()
    bare = Statement(f"{question[:-1]}: -", short=True, question=question, answer="-")
    (check,) = BuiltinChecker().check([bare], [windows(record.windows[question], context)])
    assert math.isnan(check.probability) and not check.features


def _measured(record: _Record) -> tuple[dict[str, float], str]:
    measured, _ = record.measure()
    (one,) = measured
    assert set(one.features) <= set(SHORT_FEATURES) | set(STATEMENT_FEATURES)
    return one.features, one.reason
