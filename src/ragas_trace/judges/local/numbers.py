"""Numbers an answer writes in another form than the context: a magnitude written
after the number ("3.5 million", ``scaled``), a time, range or date on the 12-hour
clock where the context has the 24-hour one (``same_clock``)."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from decimal import Decimal

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def scaled(key: str, exponent: int) -> str | None:
    """The key of a number written with a magnitude: ("3.5", 6) -> "3500000" for "3.5
    million"; None for a key that is not a plain number (a date, a range)."""
    text = key.replace(",", ".")
    if _NUMBER.fullmatch(text) is None:
        return None
    return format(Decimal(text).scaleb(exponent).normalize(), "f")


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
