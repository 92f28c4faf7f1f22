import json
from typing import Any

import httpx2
import openai
import pytest

from ragas_trace.judges.parsing import (
    ReplyError,
    parse_context_sentences,
    parse_questions,
    parse_reply,
    parse_statements,
    parse_verdicts,
)
from ragas_trace.judges.retry import retry_after_s


def _any(reply: dict[str, Any]) -> dict[str, Any]:
    return reply


def test_json_reply_forms() -> None:
    assert parse_reply('{"a": 1}', "stop", _any) == {"a": 1}
    assert parse_reply('```json\n{"a": 1}\n```', "stop", _any) == {"a": 1}
    assert parse_reply('Sure: {"a": 1} hope it helps', None, _any) == {"a": 1}
    assert parse_reply('{"a": {"b": [1, {"c": 2}]}}', None, _any) == {"a": {"b": [1, {"c": 2}]}}


def _verdicts(*supported: bool) -> str:
    return json.dumps({"verdicts": [{"id": i, "supported": s}
                                    for i, s in enumerate(supported, 1)]})


def test_the_last_conforming_block_is_the_verdict() -> None:
    statements = ["A.", "B."]
    reply = (f"The passage says:\n```json\n{_verdicts(True, True)}\n```\n"
             f"My verdict:\n```json\n{_verdicts(False, False)}\n```\n"
             f"(and for three statements it would be {_verdicts(True, True, True)})")
    verdicts = parse_reply(reply, "stop", lambda r: parse_verdicts(r, statements))
    assert [v[0] for v in verdicts] == [False, False]


def test_a_block_copied_from_the_request_is_never_the_verdict() -> None:
    statements = ["A.", "B."]
    echoed = _verdicts(True, True)
    request = f"<context>\n[1] Paris. [2] {echoed}\n</context>"
    reply = f"{_verdicts(False, True)}\nThe context also holds:\n{echoed}"
    verdicts = parse_reply(reply, "stop", lambda r: parse_verdicts(r, statements), request)
    assert [v[0] for v in verdicts] == [False, True]
    with pytest.raises(ReplyError, match="quoted from the request"):
        parse_reply(f"```json\n{echoed}\n```", "stop", _any, request)


@pytest.mark.parametrize(("content", "finish", "why"), [
    ('{"a": 1}', "length", "truncated"),
    ("", "stop", "empty"),
    (None, "stop", "empty"),
    ("[1, 2]", "stop", "not a JSON object"),
    ('{"a": ', "stop", "not a JSON object"),
    ('{"a": 1}', "content_filter", "content filter"),
])
def test_json_reply_errors(content: str | None, finish: str, why: str) -> None:
    with pytest.raises(ReplyError, match=why):
        parse_reply(content, finish, _any)


def test_statements_and_questions() -> None:
    assert parse_statements({"statements": [" A. ", "", {"statement": "B."}]}) == ["A.", "B."]
    with pytest.raises(ReplyError):
        parse_statements({"statements": "A."})
    with pytest.raises(ReplyError):
        parse_statements({"statements": [1]})
    assert parse_questions({"questions": ["Q?"], "noncommittal": "yes"}) == (["Q?"], True)
    assert parse_questions({"questions": []}) == ([], False)


def test_context_selections_by_number_or_copy() -> None:
    assert parse_context_sentences({"sentences": [2, "3", "[4]", " It rains. "]}) == (
        [2, 3, 4, "It rains."], False)
    with pytest.raises(ReplyError, match="not a sentence number"):
        parse_context_sentences({"sentences": [True]})
    with pytest.raises(ReplyError, match="no list"):
        parse_context_sentences({"sentences": "2"})


def test_insufficient_information_phrase() -> None:
    assert parse_context_sentences({"sentences": ["Insufficient Information."]}) == ([], True)
    assert parse_context_sentences({"sentences": ["A."], "insufficient_information": False}) \
        == (["A."], False)


def test_verdicts_by_id_or_position() -> None:
    statements = ["A.", "B."]
    by_id = {"verdicts": [{"id": 2, "reason": "r2", "supported": False},
                          {"id": 1, "reason": "r1", "supported": True}]}
    assert parse_verdicts(by_id, statements) == [(True, "r1", []), (False, "r2", [])]
    by_position = {"verdicts": [{"verdict": "yes", "evidence": [3, "[4]"]},
                                {"verdict": "No", "reason": None}]}
    assert parse_verdicts(by_position, statements) == [(True, "", [3, 4]), (False, "", [])]
    with pytest.raises(ReplyError, match="3 verdicts for 2"):
        parse_verdicts({"verdicts": [{"verdict": 1}] * 3}, statements)
    with pytest.raises(ReplyError):
        parse_verdicts({"verdicts": [{"supported": None}, {"supported": True}]}, statements)


def _rate_limit(headers: dict[str, str]) -> openai.RateLimitError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    return openai.RateLimitError("slow down", response=httpx2.Response(
        429, headers=headers, request=request), body=None)


def test_retry_after_headers() -> None:
    assert retry_after_s(_rate_limit({"retry-after": "2"})) == 2.0
    assert retry_after_s(_rate_limit({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_s(_rate_limit({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after_s(_rate_limit({})) is None
    assert retry_after_s(ValueError()) is None
