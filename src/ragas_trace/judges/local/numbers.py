"""Numbers an answer states that the context holds in another form: rounded ("about
3.5 million" for 3,482,000), scaled by a written magnitude, or converted between
common units ("79 °F (26 °C)", miles and kilometres). Such a number is not an
invented one, but it is weaker evidence than the context's own figure."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from decimal import Decimal

CONVERSION = 0.03  # a unit conversion, rounded to the unit
_SCALES = (1e3, 1e6, 1e9)  # thousand, million, billion
# Factors between units people convert into each other (length, mass, volume, area).
_FACTORS = (1.609344, 0.621371, 0.3048, 3.28084, 2.54, 0.393701, 0.453592, 2.20462,
            3.78541, 0.264172, 28.3495, 0.035274, 2.58999, 0.386102, 0.404686, 2.47105)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
ROUND_FROM = 10_000  # "3,500,000" may round 3,482,000; "1930" does not round 1931


def value(key: str) -> float | None:
    """The value of a number token's key ("1500", "3.5", "-2"); None for dates, times
    and ranges ("20:15", "1-0", "2022-01-09"), and for a number too large for a float
    (no rounding or unit conversion applies to it)."""
    match = _NUMBER.fullmatch(key.replace(",", "."))
    if match is None:
        return None
    number = float(match.group(0))
    return number if math.isfinite(number) else None


def scaled(key: str, exponent: int) -> str | None:
    """The key of a number written with a magnitude: ("3.5", 6) -> "3500000" for "3.5
    million"; None for a key that is not a plain number (a date, a range)."""
    text = key.replace(",", ".")
    if _NUMBER.fullmatch(text) is None:
        return None
    return format(Decimal(text).scaleb(exponent).normalize(), "f")


def _decimals(key: str) -> int:
    text = key.replace(",", ".")
    return len(text.split(".", 1)[1]) if "." in text else 0


def _rounds(stated: float, decimals: int, other: float) -> bool:
    """Whether ``other`` written with ``decimals`` decimals (or, for a large round
    figure, to its last non-zero digit) is ``stated``."""
    if decimals:
        return round(other, decimals) == stated
    digits = str(int(abs(stated)))
    zeros = len(digits) - len(digits.rstrip("0"))
    if abs(stated) >= ROUND_FROM and zeros:
        return round(other, -zeros) == stated
    return round(other) == stated and other != round(other)


# Clock, range and date parts are short; a longer run of digits is an identifier,
# and converting one of thousands of digits to int is refused by Python (and slow).
_PART = re.compile(r"(?<!\d)\d{1,18}(?!\d)")


def parts(key: str) -> list[int]:
    """The whole numbers in a composite token: a time "17:30", a range "9-14", a date."""
    return [int(p) for p in _PART.findall(key)]


def same_clock(key: str, known_parts: AbstractSet[int]) -> bool:
    """Whether a time, range or hour ("5:00", "5-9", "5") is the context's, written on
    the 12-hour clock where the context has the 24-hour one ("17:00-21:00")."""
    found = parts(key)
    return bool(found) and all(
        p in known_parts or (1 <= p <= 12 and p + 12 in known_parts) for p in found)


def _is_year(key: str) -> bool:
    """A bare four-digit number of the last thousand years or so ("1981"): a year is
    never rounded or converted, so it is the context's own or an invented one (7,400
    gallons would otherwise be "1981" litres within the conversion tolerance)."""
    return len(key) == 4 and key.isdigit() and 1000 <= int(key) <= 2100


# A unit of measure written after a number ("5 km", "79 °F", "12 pounds"): only then is
# the number read as a conversion. With 16 factors and a context's dozens of figures,
# almost any number lies within 3 % of one of them converted; on the development sets
# such matches were times, star ratings and counts, and hallucinated ones mostly.
_UNIT = re.compile(
    r"\s?(?:°|º|degrees?\b|(?:kilo|centi|milli)?(?:met(?:re|er)s?|grams?|lit(?:re|er)s?)\b"
    r"|(?:k|c|m)?m\b|(?:k|m)?g\b|l\b|ml\b|km/h|mph\b|miles?\b|mi\b|f(?:oo|ee)t\b|ft\b"
    r"|inch(?:es)?\b|pounds?\b|lbs?\b|ounces?\b|oz\b|gallons?\b|gal\b|acres?\b|hectares?\b"
    r"|ha\b|sq(?:uare|\.)?\s|fahrenheit\b|celsius\b|[fc]\b)",
    re.IGNORECASE)


def unit_follows(text: str, end: int) -> bool:
    """Whether a unit of measure follows the number that ends at ``end`` in ``text``."""
    return _UNIT.match(text, end) is not None


def near(key: str, known: Iterable[float], *, measured: bool = False) -> bool:
    """Whether the number with token key ``key`` is one of ``known`` rounded, or scaled
    by a magnitude written elsewhere (a table's "in millions"), or (where ``measured``:
    a unit follows it) converted between common units."""
    stated = value(key)
    if stated is None or stated == 0.0 or _is_year(key):
        return False
    decimals = _decimals(key)
    for other in known:
        if other == 0.0:
            continue
        if _rounds(stated, decimals, other) or any(
                _rounds(stated, decimals, other / scale) for scale in _SCALES):
            return True
        if not measured:
            continue
        tolerance = max(1.0, CONVERSION * abs(other))
        if abs((stated - 32.0) * 5.0 / 9.0 - other) <= tolerance or \
                abs(stated * 9.0 / 5.0 + 32.0 - other) <= tolerance:
            return True
        if any(abs(stated - other * f) <= CONVERSION * abs(other * f) for f in _FACTORS):
            return True
    return False
