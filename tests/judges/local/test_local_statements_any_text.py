"""Statement splitting and content tokens take any text (issue 30). A number token is
one thing everywhere: a run of decimal digits (any script's), keyed in ASCII digits;
no other token holds a decimal digit."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given

from any_text import any_text, scaled
from ragas_trace.judges.local.statements import answer_parts, clean_line
from ragas_trace.judges.local.tokens import Kind, clause_groups, content_tokens
from ragas_trace.metrics.sentences import split_sentences

pytestmark = pytest.mark.usefixtures("no_internal_errors")

_NUMBER_KEY = re.compile(r"-?[0-9]+(?:[.,:/-][0-9]+)*")


@scaled(30)
@given(any_text())
def test_statements_are_cleaned_sentences(text: str) -> None:
    parts = answer_parts(text)
    assert all(s.strip() for s in parts.statements)
    assert len(parts.statements) <= len(split_sentences(text))
    for sentence in split_sentences(text):
        assert clean_line(sentence) == clean_line(sentence).strip()


@scaled(30)
@given(any_text())
@example("The lake covers 25 km²; see ① and ②, ٢٥ or ２５ of −3 and minus 4.")
def test_number_tokens_are_decimal_digits_keyed_in_ascii(text: str) -> None:
    for token in content_tokens(text):
        assert text[token.start:token.start + len(token.text)] == token.text
        if any(c.isdecimal() for c in token.text):
            assert token.kind is Kind.NUMBER, token
            assert _NUMBER_KEY.fullmatch(token.key), token
        else:
            assert token.kind is not Kind.NUMBER or token.key.isalpha(), token  # a month


def test_digits_of_other_scripts_are_the_same_number() -> None:
    keys = [t.key for t in content_tokens("25, ٢٥, ２５, ۲۵ and २५; 1,500 or １,５００")]
    assert keys == ["25"] * 5 + ["1500", "1500"]


def test_superscript_and_circled_digits_belong_to_their_word() -> None:
    tokens = content_tokens("The lake covers 25 km²; see ① and Paris¹.")
    assert [(t.text, t.kind) for t in tokens if t.kind is Kind.NUMBER] == [("25", Kind.NUMBER)]
    assert "km²" in [t.text for t in tokens]


@scaled(30)
@given(any_text())
def test_clauses_cover_the_sentence(text: str) -> None:
    tokens = content_tokens(text)
    assert sum(len(g) for g in clause_groups(text, tokens)) == len(tokens)
