"""Sentence splitting for answers and contexts, in English, German, Chinese and other
languages: CJK full stops always end a sentence; a Latin full stop ends one only
when it is not part of an abbreviation, an initial, an ordinal or a decimal, and
the next word starts like a sentence."""

from __future__ import annotations

import re

# Lower-cased, without the final period. Multi-period forms (e.g., z.b.) match as a
# whole token.
_ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al approx ca inc ltd co corp no nos
fig figs vol vols ed eds pp p gen gov sen rep lt col capt sgt ave blvd dept univ est
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
u.s u.k u.n a.m p.m b.c a.d ph.d
z.b bzw usw d.h u.a vgl nr str jh geb gest evtl ggf inkl sog abs bspw hrsg
mme mlle
""".split())

_CJK_END = "。！？!?；"
_CLOSERS = "\"'”’»」』)）]"
# A candidate boundary: terminator run, optional closing quotes/brackets, then
# whitespace or the end (Latin), or directly anything (CJK).
_LATIN_BOUNDARY = re.compile(r"([.!?…]+)([" + re.escape(_CLOSERS) + r"]*)(\s+|$)")
_CJK_BOUNDARY = re.compile(r"([" + _CJK_END + r"]+)([" + re.escape(_CLOSERS) + r"]*)")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` with surrounding whitespace stripped; empty pieces dropped.

    Line breaks always separate sentences (headings and list items stand alone).
    """
    sentences: list[str] = []
    for line in text.splitlines():
        for piece in _split_cjk(line):
            sentences.extend(_split_latin(piece))
    return [s for s in (s.strip() for s in sentences) if s]


def _split_cjk(text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for m in _CJK_BOUNDARY.finditer(text):
        # '!' and '?' are CJK ends only right after a CJK character.
        if m.group(1)[0] in "!?" and (m.start() == 0 or not _is_cjk(text[m.start() - 1])):
            continue
        pieces.append(text[start:m.end()])
        start = m.end()
    pieces.append(text[start:])
    return pieces


def _split_latin(text: str) -> list[str]:
    # Each candidate looks only at its neighbourhood (the word before it, the character
    # after it): slicing or searching the whole text per candidate made a long passage
    # take quadratic time (a 1 MB passage held the scorer for minutes).
    pieces: list[str] = []
    start = 0
    end = len(text.rstrip())
    for m in _LATIN_BOUNDARY.finditer(text):
        if m.end() >= end:
            break
        if _is_boundary(text, m.start(), m.group(1), text[m.end():m.end() + 1]):
            pieces.append(text[start:m.start() + len(m.group(1)) + len(m.group(2))])
            start = m.end()
    pieces.append(text[start:])
    return pieces


def _word_before(text: str, at: int) -> str:
    """The run of non-space characters that ends at ``at``."""
    begin = at
    while begin > 0 and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:at]


def _is_boundary(text: str, at: int, terminator: str, nxt: str) -> bool:
    if not nxt:
        return False
    if terminator != ".":
        return True  # '!', '?', '...' followed by whitespace
    word = _word_before(text, at)
    bare = word.lstrip("(\"'“‘«").lower()
    if bare in _ABBREVIATIONS:
        return False
    if len(bare) == 1 and bare.isalpha():
        return False  # an initial: "J. R. R. Tolkien"
    if bare.isdigit() and len(bare) <= 2 and nxt.isalpha():
        return False  # a German ordinal: "am 3. Oktober"
    return nxt.isupper() or nxt.isdigit() or nxt in "\"'“‘«([" or \
        _is_cjk(nxt)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (0x3040 <= code <= 0x30FF or 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF
            or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF)
