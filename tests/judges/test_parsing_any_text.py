"""The LLM judge's reply parsing takes any reply (issue 30): a usable reply gives
its values, anything else a ``ReplyError`` with a plain reason, never another
exception."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from any_text import any_text, plain_reason, scaled
from ragas_trace.judges.parsing import (
    ReplyError,
    parse_context_sentences,
    parse_questions,
    parse_reply,
    parse_statements,
    parse_verdicts,
)

pytestmark = pytest.mark.usefixtures("no_internal_errors")

_KEYS = ["statements", "statement", "questions", "question", "noncommittal", "sentences",
         "insufficient_information", "verdicts", "id", "supported", "verdict", "reason",
         "evidence"]
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | any_text(max_pieces=3, large=False),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=5), inner, max_size=4),
    max_leaves=12)


@st.composite
def replies(draw: st.DrawFn) -> str:
    """JSON objects with the keys the parsers look for, holding anything, wrapped in
    what models wrap them in (prose, code fences, a second block), or any text."""
    body = json.dumps(draw(st.dictionaries(st.sampled_from(_KEYS), _json_value, max_size=4)),
                      ensure_ascii=draw(st.booleans()))
    wrapped = draw(st.sampled_from(["{}", "```json\n{}\n```", "Here: {} done", "{} {}",
                                    "{}" + "}" * 3, "{" * 3 + "{}"]))
    return wrapped.replace("{}", body)


_PARSERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "statements": parse_statements,
    "questions": parse_questions,
    "context sentences": parse_context_sentences,
    "verdicts": lambda reply: parse_verdicts(reply, ["The lake is deep.", "It is 40 m."]),
}


@pytest.mark.parametrize("parser", list(_PARSERS))
@scaled(30)
@given(content=st.one_of(replies(), any_text(), st.none()),
       finish=st.sampled_from([None, "stop", "length", "content_filter", "tool_calls"]),
       quoted=st.sampled_from(["", "The lake is deep."]))
@example(content='{"a":' * 100_000, finish=None, quoted="")
@example(content='{"statements": ' + "[" * 100_000 + "]" * 100_000 + "}", finish="stop",
         quoted="")
def test_any_reply_gives_values_or_a_reply_error_with_a_plain_reason(
        parser: str, content: str | None, finish: str | None, quoted: str) -> None:
    try:
        parse_reply(content, finish, _PARSERS[parser], quoted)
    except ReplyError as exc:
        assert plain_reason(str(exc)), exc
