"""Content-bearing tokens of a text and whether another text contains them.

A token is a number, a word, or (in CJK text, which has no spaces) a character bigram.
Function words are dropped. Each token carries a kind: numbers and proper names are
facts that must occur in the source verbatim; other words may be paraphrased, so they
weigh by how rare they are (the rank of the word in the embedding model's vocabulary,
which is ordered by frequency, serves as a frequency list in any Latin-script
language the vocabulary covers).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from enum import Enum

from ragas_trace.judges.local.lexicon import (
    MAGNITUDE_SUFFIXES,
    MAGNITUDE_WORDS,
    MONEY_SUFFIXES,
    MONTHS,
    NAME_LINKS,
    NUMBER_VALUES,
    ONE_BEFORE_MAGNITUDE,
    STOPWORDS,
    TENS,
)
from ragas_trace.judges.local.numbers import scaled

# What a number is, defined here once: a run of decimal digits (``\d`` in a str
# pattern: Unicode category Nd, what ``str.isdecimal`` tests; "25", "٢٥", "２５")
# with inner separators and an optional sign. Other characters with a digit value
# (superscripts "km²", footnote marks "Paris¹", circled "①", fractions "½") are not
# numbers: they are word characters, part of the word they are written in.
_TOKEN = re.compile(
    r"(?P<sign>(?<![\w.,])[-−](?=\d)|\b(?i:minus|negative)\s+(?=\d))?"  # -2, minus 2
    r"(?P<number>\d+(?:[.,:/-]\d+)*)"  # 1,500  365.2422  1-0  20:15
    r"|(?P<initials>(?<![^\W\d_])(?:[A-Z]\.){2,})"  # U.S., D.C.: the name "US", "DC"
    r"|[^\W\d_]+(?:[-'’][^\W\d_]+)*",  # words, with inner hyphens/apostrophes
)
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "ly",
             "en", "er", "e", "n")
_MIN_STEM = 4
# Never starting inside a run of whitespace: a match there would also start at the
# run's first character, which the scan tries first; without the guard a long run
# (a PDF's padding) is searched again from each of its characters (cubic time).
_CLAUSE_BREAK = re.compile(r"(?!(?<=\s)\s)\s*(?:[;:—–]|,\s+(?:and|but|while|whereas|und"
                           r"|aber|sondern)\b|\s(?:but|whereas)\s|[，；：])\s*", re.IGNORECASE)


class Kind(Enum):
    NUMBER = "number"  # also a month: part of a date
    NAME = "name"
    WORD = "word"


@dataclass(frozen=True, slots=True)
class Token:
    text: str  # as written
    key: str  # normalised for matching
    kind: Kind
    start: int = 0  # offset in the text it came from


def normalise(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def fold_accents(text: str) -> str:
    """"fiancée" -> "fiancee", "Pérez" -> "Perez": a question or an answer often drops
    the accents its context has. For matching keys only; the word lists are checked
    against the text as written."""
    decomposed = unicodedata.normalize("NFKD", text)
    if decomposed == text:
        return text
    return unicodedata.normalize("NFKC", "".join(
        c for c in decomposed if not unicodedata.combining(c)))


def stem(word: str) -> str:
    """A crude suffix stripper: enough to match patented/patent, Mauern/Mauer."""
    word = word.removesuffix("'s")
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM:
            return word[: -len(suffix)]
    return word


def _number_key(match: re.Match[str]) -> str:
    """1,500 == 1500 (365.2422 stays); minus 2 == -2 == −2; ٢٥ == ２５ == 25."""
    digits = match.group("number")
    if not digits.isascii():
        digits = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in digits)
    return ("-" if match.group("sign") else "") + re.sub(r"[.,](?=\d{3}\b)", "", digits)


_JOINED = re.compile(r"(?:[kKMBmb]|bn|mn)\b")
_WORD_AFTER = re.compile(r"[^\S\n]+([^\W\d_]+)")


def _magnitude(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The power of ten written after the number ``text[start:end]`` ("100k", "$2B",
    "3.5 million", "three million") and where it ends; None where none is."""
    if (joined := _JOINED.match(text, end)) is not None:
        suffix = joined.group(0)
        exponent = MAGNITUDE_SUFFIXES.get(suffix) or MAGNITUDE_WORDS.get(suffix)
        if exponent is None and start and text[start - 1] in "$£€¥":
            exponent = MONEY_SUFFIXES.get(suffix)
        return None if exponent is None else (exponent, joined.end())
    if (word := _WORD_AFTER.match(text, end)) is not None \
            and (exponent := MAGNITUDE_WORDS.get(normalise(word.group(1)))) is not None:
        return exponent, word.end()
    return None


def _scaled(text: str, m: re.Match[str], low: str) -> Token | None:
    """A number, or a counting word, and the magnitude written after it, as one token."""
    if m.group("number"):
        key, start = _number_key(m), m.start("number")
    elif low in NUMBER_VALUES or low in ONE_BEFORE_MAGNITUDE:
        key, start = str(NUMBER_VALUES.get(low, 1)), m.start()
    else:
        return None
    magnitude = _magnitude(text, start, m.end())
    if magnitude is None or (big := scaled(key, magnitude[0])) is None:
        return None
    return Token(text[m.start():magnitude[1]], big, Kind.NUMBER, m.start())


def content_tokens(text: str) -> list[Token]:
    """Content-bearing tokens in order of appearance. A number and the magnitude
    written after it are one token with the value they make: "100k", "100 thousand"
    and "100,000" are the same fact."""
    tokens: list[Token] = []
    consumed = 0  # the end of the last magnitude read with its number
    for m in _TOKEN.finditer(_CJK_RUN.sub(lambda r: " " * len(r.group(0)), text)):
        if m.start() < consumed:
            continue
        raw = m.group(0)
        low = normalise(raw)
        if (big := _scaled(text, m, low)) is not None:
            tokens.append(big)
            consumed = big.start + len(big.text)
            continue
        if m.group("number"):
            tokens.append(Token(raw, _number_key(m), Kind.NUMBER, m.start()))
            continue
        if m.group("initials"):
            tokens.append(Token(raw, stem(fold_accents(normalise(raw.replace(".", "")))),
                                Kind.NAME, m.start()))
            continue
        # "10:00 AM" on a 24-hour record ("10:00-20:00"): the meridiem belongs to the
        # time (``numbers.same_clock``), not a name the record lacks.
        if low in ("am", "pm") and text[max(0, m.start() - 2):m.start()].strip()[-1:].isdigit():
            continue
        if low in MONTHS and raw[0].isupper():  # "may", "march" are verbs
            tokens.append(Token(raw, low, Kind.NUMBER, m.start()))
        elif "-" in low and (counted := _number_word(low)) is not None:
            tokens.extend(_compound(raw, m.start(), *counted))
        # "Two years." read after its question is a count, not a name.
        elif raw[0].isupper() and len(raw) > 1 and not _sentence_initial(text, m.start()) \
                and low not in NUMBER_VALUES:
            tokens.append(Token(raw, stem(fold_accents(low)), Kind.NAME, m.start()))
        elif low not in STOPWORDS and len(low) > 1:
            tokens.append(Token(raw, stem(fold_accents(low)), Kind.WORD, m.start()))
    for m in _CJK_RUN.finditer(text):
        run = m.group(0)
        grams = [(i, run[i:i + 2]) for i in range(len(run) - 1)] or [(0, run)]
        tokens.extend(Token(g, g, Kind.WORD, m.start() + i) for i, g in grams)
    return sorted(tokens, key=lambda t: t.start)


_WORD_AT = re.compile(r"[^\W\d_][\w'’-]*")
_LONGEST_INITIALISM = 6


def _name_runs(text: str) -> list[list[re.Match[str]]]:
    """The runs of capitalised words (not opened by "The"), a small word such as "of"
    allowed between two of them."""
    runs: list[list[re.Match[str]]] = []
    run: list[re.Match[str]] = []
    end = 0  # where the run's last word, or a link after it, ends
    linked = False  # a small word follows the run's last capitalised word
    for m in _WORD_AT.finditer(text):
        word = m.group(0)
        next_to = bool(run) and text[end:m.start()].strip() in ("", "-")
        if word[0].isupper() and word.casefold() != "the":
            if not next_to:
                run = []
                runs.append(run)
            run.append(m)
            linked = False
        elif next_to and not linked and word in NAME_LINKS:
            linked = True
        else:
            run = []
            continue
        end = m.end()
    return runs


def _initials_key(words: Sequence[re.Match[str]]) -> str:
    return stem(fold_accents(normalise("".join(w.group(0)[0] for w in words))))


def initialisms(text: str) -> list[Token]:
    """The abbreviations the text's names make of their initials, as name tokens: a
    context's "United States" holds an answer's "US", "Centers for Disease Control"
    its "CDC". Each run of capitalised words gives the initials of its first two,
    three, ... words."""
    out: list[Token] = []
    for run in _name_runs(text):
        letters = "".join(w.group(0)[0] for w in run[:_LONGEST_INITIALISM])
        out.extend(Token(letters[:n], _initials_key(run[:n]), Kind.NAME, run[0].start())
                   for n in range(2, len(letters) + 1))
    return out


def is_abbreviation(text: str) -> bool:
    """Written as initials: "US", "U.S.", "UNHCR"."""
    letters = text.replace(".", "")
    return 2 <= len(letters) <= _LONGEST_INITIALISM and letters.isalpha() \
        and letters.isupper()


def abbreviated(text: str, keys: AbstractSet[str]) -> set[int]:
    """Where the words start that a name of the text spells out while ``keys`` hold its
    initials: an answer's "United States" where the context says "U.S."."""
    out: set[int] = set()
    for run in _name_runs(text):
        for n in range(min(len(run), _LONGEST_INITIALISM), 1, -1):
            if _initials_key(run[:n]) in keys:
                out.update(w.start() for w in run[:n])
                break
    return out


_PLAIN_WORD = re.compile(r"[^\W\d_]+")
_LONGEST_DEFINED = 10  # letters of an abbreviation defined in brackets
_CHARS_PER_WORD = 40  # how far back its words are looked for, per letter


def defined_in_brackets(text: str, token: Token) -> bool:
    """Whether the token is an abbreviation the text defines in brackets after the
    words it abbreviates ("artificial intelligence (AI)", "click-through rate (CTR)"):
    no fact of its own."""
    if token.kind is not Kind.NAME or text[token.start - 1:token.start] != "(":
        return False
    letters = token.text.removesuffix("s").casefold()
    if len(letters) > _LONGEST_DEFINED:
        return False
    # Only the text just before the bracket: a text of thousands of bracketed tokens
    # stays linear.
    before = text[max(0, token.start - 1 - _CHARS_PER_WORD * len(letters)):token.start - 1]
    words = [w for w in _PLAIN_WORD.findall(before)
             if w.casefold() not in NAME_LINKS][-len(letters):]
    return len(words) == len(letters) and "".join(w[0] for w in words).casefold() == letters


def spelled_out(tokens: Iterable[Token]) -> list[Token]:
    """The counts that words among ``tokens`` spell out ("three" in "three hours"), as
    number tokens. A context's "three hours" holds an answer's "3 hours". (A statement
    checked against the context reads its own counting words with ``counted``; a
    hyphenated compound, "two-year", is a count and its unit in any text:
    ``content_tokens`` splits it.)"""
    out = []
    for token in tokens:
        if token.kind is Kind.NUMBER or (counted := _number_word(normalise(token.text))) is None:
            continue
        out.append(Token(token.text, counted[0], Kind.NUMBER, token.start))
    return out


# The keys counting words get as words: a cheap test before ``counted``.
_COUNT_KEYS = frozenset(stem(fold_accents(word)) for word in NUMBER_VALUES)


def counted(token: Token) -> str | None:
    """The number key a plain counting word spells ("two" -> "2"), ``None`` for any
    other token."""
    if token.kind is not Kind.WORD or token.key not in _COUNT_KEYS \
            or (count := _number_word(normalise(token.text))) is None:
        return None
    return None if count[1] else count[0]


def _compound(raw: str, start: int, key: str, rest: str) -> list[Token]:
    """A counting compound's number and the rest of it: "two-year" gives 2 and "year",
    "twenty-five" 25."""
    out = [Token(raw[:len(raw) - len(rest) - 1] if rest else raw, key, Kind.NUMBER, start)]
    if rest and rest not in STOPWORDS and len(rest) > 1:
        out.append(Token(raw[-len(rest):], stem(fold_accents(rest)), Kind.WORD,
                         start + len(raw) - len(rest)))
    return out


def _number_word(low: str) -> tuple[str, str] | None:
    """A counting word's number key, and the rest of a hyphenated compound: "five" ->
    ("5", ""), "twenty-five" -> ("25", ""), "two-year" -> ("2", "year"); None for any
    other word."""
    head, _, rest = low.partition("-")
    if head not in NUMBER_VALUES:
        return None
    unit, _, after = rest.partition("-")
    if head in TENS and (unit == "one" or NUMBER_VALUES.get(unit, 10) < 10):
        return str(NUMBER_VALUES[head] + NUMBER_VALUES.get(unit, 1)), after
    return str(NUMBER_VALUES[head]), rest


def _sentence_initial(text: str, at: int) -> bool:
    # A bounded look back: copying the whole prefix per token is quadratic.
    start = max(0, at - 64)
    before = text[start:at].rstrip(" \t\"'“‘«(¿¡")  # "¿Quién ...?" opens a sentence
    if not before:
        return start == 0
    return before[-1] in ".!?:;\n…。！？"


def clause_groups(sentence: str, tokens: Sequence[Token]) -> list[list[Token]]:
    """The sentence's tokens grouped by clause (cut at ';', ', and', ', but' ...)."""
    cuts = [m.start() for m in _CLAUSE_BREAK.finditer(sentence)]
    groups: list[list[Token]] = [[] for _ in range(len(cuts) + 1)]
    for token in tokens:
        groups[sum(1 for c in cuts if c < token.start)].append(token)
    return [g for g in groups if g]


class Vocabulary:
    """The set of token keys of a source text, with prefix and suffix matching for
    inflections the stemmer misses (African ~ Africa) and compounds."""

    def __init__(self, tokens: Iterable[Token]) -> None:
        self.keys = frozenset(t.key for t in tokens)
        self._matched: dict[str, bool] = {}  # affix matches, once per key
        self._sorted: list[str] | None = None
        self._reversed: list[str] = []
        self._lengths: list[int] = []  # of the long keys, each once, ascending

    def __contains__(self, token: object) -> bool:
        if not isinstance(token, Token):
            return False
        if token.key in self.keys:
            return True
        # An answer's "two years" is what a context's "two-year" or "2 years" says.
        if (count := counted(token)) is not None and count in self.keys:
            return True
        if token.kind is Kind.NUMBER or len(token.key) < _MIN_STEM + 1:
            return False
        # "Wi-Fi" and "WiFi", "e-mail" and "email": one word, spelt with a hyphen or not
        # (not a score or a range: "1-0" is no "10").
        if "-" in token.key and token.key.replace("-", "") in self.keys:
            return True
        known = self._matched.get(token.key)
        if known is None:
            known = self._matched[token.key] = self._affix_match(token.key)
        return known

    def _affix_match(self, key: str) -> bool:
        """A key of more than ``_MIN_STEM`` characters that starts or ends with ``key``,
        or that ``key`` starts with (Metalllettern ~ Lettern). Sorted lists, built on
        first use, make each test a binary search instead of a scan of every key; the
        prefixes of ``key`` tried are only as long as some key is (not every length up
        to ``key``'s: quadratic for a token of thousands of characters)."""
        if self._sorted is None:
            long_keys = [k for k in self.keys if len(k) > _MIN_STEM]
            self._sorted = sorted(long_keys)
            self._reversed = sorted(k[::-1] for k in long_keys)
            self._lengths = sorted({len(k) for k in long_keys})
        if _has_prefix(self._sorted, key) or _has_prefix(self._reversed, key[::-1]):
            return True
        return any(key[:n] in self.keys for n in self._lengths if n < len(key))


def _has_prefix(ordered: list[str], prefix: str) -> bool:
    """Whether some string of the sorted list starts with ``prefix``."""
    at = bisect.bisect_left(ordered, prefix)
    return at < len(ordered) and ordered[at].startswith(prefix)


RarityFn = Callable[[str], float]


def folded(text: str) -> str:
    """Case, accents and spacing folded: two texts that differ only in those match."""
    return " ".join(fold_accents(normalise(text)).split())


_PLAIN = re.compile(r"[\u3400-\u9fff]|[^\W_]+")


def plain_words(text: str) -> list[str]:
    """Content words as written, case folded, no stemming (CJK: characters): the
    exact wording an answer copies or departs from."""
    return [w for w in (m.group(0).casefold() for m in _PLAIN.finditer(text))
            if w not in STOPWORDS]


def weight(token: Token, rarity: RarityFn) -> float:
    """How much a token matters as a fact: numbers and names fully, words by rarity."""
    if token.kind is not Kind.WORD:
        return 1.0
    return rarity(token.text)
