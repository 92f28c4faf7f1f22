"""Hypothesis strategies for "any text", shared by the property tests of every text
path (the ``*_any_text`` modules), and the invariant a judge's scores must keep.

Text is drawn from every Unicode general category (lone surrogates included) and
from fragments that broke or could break a text path: digits of every script,
superscripts, fractions and circled digits, full-width forms, combining marks,
zero-width and bidi controls, emoji sequences, NUL and control characters,
mojibake, the markup real answers carry; and, less often, a token of 100,000
characters or markdown and JSON nested thousands deep. The strings that did break
something are kept in ``regressions.json`` (next to this module) and replayed as
explicit examples."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st

from ragas_trace.exporters.evaluation_span import explanation
from ragas_trace.results import Metric, MetricStatus, Scores

# {"text": ..., "broke": what it broke}
REGRESSION_CASES: list[dict[str, str]] = json.loads(
    (Path(__file__).parent / "regressions.json").read_text(encoding="utf-8"))["cases"]
REGRESSIONS = [case["text"] for case in REGRESSION_CASES]

HUGE = 100_000  # characters in one token: far past any limit or window of the code


def scaled(examples: int) -> settings:
    """``examples`` under the default profile, 20 times as many under
    ``HYPOTHESIS_PROFILE=long`` (its ``max_examples`` against the default 100)."""
    return settings(max_examples=max(1, examples * settings.default.max_examples // 100))


# Every general category, surrogates (Cs) and unassigned code points (Cn) included.
any_character = st.characters(codec=None, categories=None, exclude_categories=())
number_character = st.characters(categories=["Nd", "Nl", "No"])  # every script's digits
mark_or_control = st.characters(categories=["Mn", "Mc", "Me", "Cc", "Cf", "Zl", "Zp", "Cs"])

FRAGMENTS = (
    # numbers in every form a number token may take, and characters that only look so
    "25 km²", "see ① and ②", "10⁻³", "H₂O", "x²+y²", "Paris¹", "½", "⅔ of 1,500", "Ⅻ",
    "٣٫١٤", "۱۲۳", "१२३", "１２３", "-2", "−3", "minus 4", "1,500", "365.2422", "20:15",
    "1-0", "2022-01-09", "9-14", "5:00", "1e309", "NaN", "Infinity", "-0", "0.0", "9" * 400,
    # full-width, combining, zero-width, bidi, emoji
    "ＡＢＣ。", "Ｔｈｅ ｌａｋｅ．", "e\u0301", "\u0301", "a" + "\u0300" * 100, "\u200b",
    "\u200c\u200d", "\ufeff", "\u2060", "\u202e", "\u202a\u202b\u202c\u202d",
    "\u2066\u2067\u2068\u2069",
    "\u200e\u200f", "👩‍👩‍👧‍👦", "🇫🇷🇩🇪", "👍🏽", "1️⃣", "🏳️‍🌈",
    # NUL, controls, line separators, lone surrogates, replacement characters
    "\x00", "\x07", "\x1b[31m", "\r\n", "\r", "\x0b\x0c", "\x1c\x1d\x1e\x1f", "\x85",
    "\u2028", "\u2029", "\udc80", "\ud800", "x\udfffy", "\ufffd", "\uffff",
    # mojibake: UTF-8 read as Latin-1 / cp1252
    "Ã©tÃ©", "â€™s", "ï»¿", "Ã¤Ã¶Ã¼", "Ð¿Ñ€Ð¸Ð²ÐµÑ‚", "æ—¥æœ¬",
    # abbreviations, ordinals, sentence ends of several scripts
    "Mr.", "e.g.", "J. R. R.", "am 3. Oktober", "...", "…", "。", "！", "¿Quién?", "?!",
    # what answers wrap statements in, and JSON
    "# Heading", "> quote", "- item", "1. item", "**bold**", "`code`", "[1]", "(Passage 2)",
    '{"a": 1}', "[[]]", "{", "}", "Based on the provided passages,", "I hope this helps.",
    "I'm not sure, but", "The passages do not mention it.", "Passage 1:", "|a|b|\n|-|-|",
    "<script>", "\\", '"', "'", "not", "never", "May", "长城很长", "東京タワー", "서울",
)
SENTENCES = (
    "The Eiffel Tower was completed in 1889.",
    "It is 330 metres tall and stands in Paris.",
    "The lake covers 25 km² and is 40 m deep.",
    "Marie Curie won the Nobel Prize in Physics in 1903.",
    "Die Mauer wurde am 9. November 1989 geöffnet.",
    "长城很长。",
    "When was the tower finished?",
    "Yes.",
)


def _huge(draw: st.DrawFn) -> str:
    unit = draw(st.sampled_from(["a", "1", "²", "\u0301", "é", "長", "-", ".", "\x00", "👍",
                                 "\udc80", " ", "\n", "1,"]))
    return unit * (HUGE // len(unit))


def _nested(draw: st.DrawFn) -> str:
    depth = draw(st.sampled_from([50, 1_000, 20_000]))
    opening, closing = draw(st.sampled_from([
        ("> ", ""), ("#", " x"), ("- ", "x"), ("*", "*"), ("**", "**"), ("[", "]"),
        ("(", ")"), ("```", ""), ('{"a":', "}"), ("[", "]1"), ('{"content":', "}")]))
    return opening * depth + "x" + closing * depth


@st.composite
def _large(draw: st.DrawFn) -> str:
    return draw(st.sampled_from([_huge, _nested]))(draw)


piece = st.one_of(
    st.text(any_character, max_size=40),
    st.text(number_character, min_size=1, max_size=8),
    st.text(mark_or_control, min_size=1, max_size=4),
    st.sampled_from(FRAGMENTS),
    st.sampled_from(SENTENCES),
    st.sampled_from([r for r in REGRESSIONS if len(r) <= 1_000]),  # long ones: _large
)
_SEPARATORS = st.sampled_from(["", " ", "\n", ". ", ", ", "\n\n", "\t"])


@st.composite
def any_text(draw: st.DrawFn, max_pieces: int = 8, large: bool = True) -> str:
    """Any string: pieces of the kinds above, joined by spaces, line breaks or
    sentence ends; with ``large``, sometimes one 100,000-character token or deeply
    nested markup among them."""
    pieces = draw(st.lists(st.tuples(piece, _SEPARATORS), max_size=max_pieces))
    text = "".join(p + s for p, s in pieces)
    if large and draw(st.integers(0, 9)) == 0:
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_large()) + text[at:]
    return text


def passages(max_size: int = 4) -> st.SearchStrategy[list[str]]:
    return st.lists(any_text(max_pieces=6), max_size=max_size)


def mojibake_bytes() -> st.SearchStrategy[bytes]:
    """Bytes that are not UTF-8, or are only almost: a lone Latin-1 byte, a truncated
    or overlong sequence, an encoded surrogate (CESU-8), a UTF-16 text, a BOM."""
    return st.one_of(
        st.binary(max_size=20),
        st.sampled_from([b"\xe9", b"\xff\xfe", b"\xef\xbb\xbf", b"\xc3", b"\xe2\x80",
                         b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\x80",
                         "é".encode("latin-1"), "Zürich".encode("utf-16"),
                         b"ok"]),
        any_text(max_pieces=3, large=False).map(
            lambda t: t.encode("utf-8", "surrogatepass")),
    )


def plain_reason(reason: Any) -> bool:
    """A reason a person can read: non-empty text on one line, no traceback."""
    return isinstance(reason, str) and bool(reason.strip()) and "\n" not in reason \
        and "Traceback" not in reason


# Statuses that say by themselves what is missing from the record; the others need
# their reason (which limit, which failure).
_SELF_EXPLAINED = frozenset({MetricStatus.NO_QUESTION, MetricStatus.NO_ANSWER,
                             MetricStatus.NO_CONTEXT})


def assert_plain_scores(scores: Scores, metrics: frozenset[Metric],
                        failed_ok: bool = False) -> None:
    """Each metric ``scored`` with a finite value in [0, 1], or another status with a
    plain reason (or one that says itself what is missing); ``failed`` only where the
    judge may fail for reasons outside it (``failed_ok``: an endpoint's reply).
    Nothing anywhere in the scores is NaN or infinite."""
    for metric in metrics:
        result = scores.result(metric)
        if result.status is MetricStatus.SCORED:
            assert result.value is not None and math.isfinite(result.value), result
            assert 0.0 <= result.value <= 1.0, result
            continue
        assert result.value is None, result
        assert failed_ok or result.status is not MetricStatus.FAILED, result
        if result.reason is not None or result.status not in _SELF_EXPLAINED:
            assert plain_reason(result.reason), result
        assert plain_reason(explanation(metric, result, scores))
    json.dumps(scores.to_dict(), allow_nan=False)  # ValueError on NaN or infinity
