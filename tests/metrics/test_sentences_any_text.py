"""Sentence splitting takes any text (issue 30): every sentence is a stripped,
non-empty piece of one line of the text, in order."""

from __future__ import annotations

import pytest
from hypothesis import given

from any_text import any_text, scaled
from ragas_trace.metrics.sentences import split_sentences

pytestmark = pytest.mark.usefixtures("no_internal_errors")

# What str.splitlines breaks at: no sentence spans one.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@scaled(30)
@given(any_text())
def test_sentences_are_stripped_pieces_of_single_lines_in_order(text: str) -> None:
    at = 0
    for sentence in split_sentences(text):
        assert sentence and sentence == sentence.strip()
        assert not any(c in sentence for c in _LINE_BREAKS)
        found = text.find(sentence, at)
        assert found >= 0, (sentence, text)
        at = found + len(sentence)


@pytest.mark.parametrize("text", ["am 3. Oktober", "am ３. Oktober", "am ³. Oktober",
                                  "See ①. Then ②.", "It is 25 km². It is deep."])
def test_digits_of_any_kind_do_not_break_the_rules(text: str) -> None:
    sentences = split_sentences(text)
    assert "".join(sentences).replace(" ", "") == text.replace(" ", "")
