import httpx2
import openai
import pytest

from ragas_trace.judges.parsing import (
    ReplyError,
    parse_context_sentences,
    parse_json_reply,
    parse_questions,
    parse_statements,
    parse_verdicts,
)
from ragas_trace.judges.retry import retry_after_s


def test_json_reply_forms() -> None:
    assert parse_json_reply('{"a": 1}', "stop") == {"a": 1}
    assert parse_json_reply('```json\n{"a": 1}\n```', "stop") == {"a": 1}
    assert parse_json_reply('Sure: {"a": 1} hope it helps', None) == {"a": 1}


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
        parse_json_reply(content, finish)


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
