"""The statements stage: the answer, read with its question, as the ``Statement``s
faithfulness checks and the parts answer relevance reads (``read_answer``).

What real LLM answers wrap their statements in is removed before they are judged:
markdown (headings, list markers, emphasis), citations of the passages ("[2]",
"(Passage 3)"), lead-ins about the passages ("Based on the provided passages, ..."),
sentences about the answer or the passages themselves ("Here is a summary:", "I hope
this helps", "The passages do not mention ...") and hedges in front of a substantive
answer ("I'm not certain, but ...").

None of these is a statement about the world for the context to support: the
paper's first step, an LLM listing the answer's statements, leaves them out too.
The paper's statement step also reads the question with the answer: to "What year
did the bridge open?" the answer "1931" states that the bridge opened in 1931, so a
short answer is one statement, "question: answer", checked in the question's frame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragas_trace.judges.local.checker import Statement
from ragas_trace.judges.local.lexicon import is_noncommittal
from ragas_trace.judges.local.tokens import content_tokens
from ragas_trace.metrics.sentences import split_sentences

_SOURCE = (r"(?:passages?|documents?|docs?|sources?|contexts?|texts?|articles?|excerpts?"
           r"|snippets?|references?|search results?|results?|information|data|json"
           r"|(?:structured\s+)?data|records?|reviews?|news|report|given\s+\w+)")
_MARKDOWN_LINE = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*•·▪‣]\s+|\(?\d{1,2}[.)]\s+|[a-z][.)]\s+)")
_EMPHASIS = re.compile(r"\*\*|__|`+|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")
# Each alternative starts where a run of spaces starts and takes the whole run: tried
# from every space of a long run, the search was quadratic (seconds on 20,000 spaces);
# the matches are the same.
_CITATION = re.compile(
    r"(?<!\s)\s*+\[(?:\d+|[a-z]?\d+(?:\s*[,–-]\s*\d+)*|(?:passage|source|doc(?:ument)?)\s*\d+)\]"
    r"|(?<!\s)\s*+\((?:see\s+)?(?:passages?|sources?|docs?|documents?|refs?|contexts?)\.?\s*\d+"
    r"(?:\s*(?:,|and|&|–|-)\s*\d+)*\)",
    re.IGNORECASE)
_LEAD_IN = re.compile(
    r"^(?:(?:sure|certainly|of course|absolutely|okay|ok|yes|great)[,!.]\s+)?"
    r"(?:(?:based|drawing)\s+(?:solely\s+|only\s+|entirely\s+)?on|according\s+to|as\s+"
    r"(?:stated|mentioned|described|noted|shown)\s+in|from|per|in|using)\s+"
    r"(?:the\s+|these\s+|this\s+|all\s+the\s+|each\s+|my\s+|our\s+)?"
    r"(?:(?:provided|given|above|available|retrieved|supplied|following"
    r"|relevant|three|two|first|second|third|\d)\s+)*" + _SOURCE
    + r"(?:\s+\d+)?(?:\s+(?:provided|given|above|you\s+(?:provided|gave)))?"
    r"(?:\s*\([^)]*\))?\s*[,:]\s*",
    re.IGNORECASE)
_CITED_LEAD_IN = re.compile(
    r"^(?:(?:as\s+)?(?:passage|source|document)\s+\d+\s+(?:says|states|mentions|notes"
    r"|explains|indicates)(?:\s+that)?|(?:passage|source|document)\s+\d+\s*:)\s*",
    re.IGNORECASE)
_OPENER = re.compile(r"^(?:sure|certainly|of course|absolutely|okay|ok|great)[,!.]*\s*",
                     re.IGNORECASE)
# Whole sentences about the answer, the conversation or the passages themselves.
_META = re.compile(
    r"^(?:here(?:\s+is|\s+are|'s|’s)|below\s+(?:is|are)|the\s+following\s+(?:is|are))\b"
    r"|\b(?:i\s+hope\s+(?:this|that|it)\s+helps|let\s+me\s+know|feel\s+free\s+to"
    r"|if\s+you\s+have\s+(?:any\s+)?(?:other|further|more)\s+questions|hope\s+this\s+helps"
    r"|i\s+(?:would|'d)\s+(?:be\s+happy|recommend\s+(?:checking|consulting|verifying)))\b"
    r"|^(?:(?:in\s+)?summary|to\s+summari[sz]e|overall|in\s+conclusion)\s*[:.]?\s*$"
    r"|^(?:the\s+|these\s+|this\s+)?(?:provided\s+|given\s+|above\s+)*" + _SOURCE
    + r"(?:\s+\d+)?\s+(?:do(?:es)?\s+not|don't|doesn't|did\s+not|didn't|fail\s+to|fails\s+to)"
    r"\s+(?:\w+\s+)?(?:mention|provide|specify|say|contain|include|state|give|offer|address"
    r"|discuss|indicate)"
    r"|^there\s+is\s+no\s+(?:mention|information|indication)\b"
    r"|^(?:no|not\s+enough)\s+(?:specific\s+)?information\s+(?:is|was)\s+(?:provided|given"
    r"|available)",
    re.IGNORECASE)
_HEDGE_BUT = re.compile(r"^.*?\b(?:but|however|though)\b[,\s]*", re.IGNORECASE)
_INTRO_COLON = re.compile(r"^(?:here(?:\s+is|\s+are|'s|’s)|below\s+(?:is|are)|the\s+following\s+"
                          r"(?:is|are))\b[^:]{0,120}:\s*(?=\S)", re.IGNORECASE)
_SUMMARY_LEAD = re.compile(r"^(?:in\s+summary|to\s+summari[sz]e|overall|in\s+conclusion"
                           r"|in\s+short|in\s+brief)\s*,\s*", re.IGNORECASE)
MAX_HEADING_WORDS = 6
SHORT_WORDS = 6  # a Latin-script answer of at most this many words and no full stop
SHORT_CJK_CHARS = 24
SENTENCE_WORDS = 4  # as many words or more, ending in a full stop: a sentence
SENTENCE_CJK_CHARS = 8
_CJK = re.compile(r"[\u3400-\u9fff]")
_SENTENCE_END = re.compile(r"[.!?。！？]\s+\S")
# A sentence that opens with a subject pronoun continues the previous sentence's
# subject ("Curie won ... . She shared ..."); a possessive opener ("His rival, Gray, ...")
# does not, since its subject is someone else.
_SUBJECT_PRONOUN = re.compile(
    r"^\W*(he|she|it|they|this|these|er|sie|es|dies|diese[rs]?)\b|^\W*[他她它]",
    re.IGNORECASE)
# Openers that refer back without making the sentence's subject the previous one's:
# possessives ("Its founder, ...") and French and Spanish subject pronouns.
_REFERS_BACK = re.compile(
    r"^\W*(its|his|her|their|sein[e]?|ihr[e]?|il|elle|ils|elles|son|sa|ses|leur|lo|la|"
    r"su|sus|él|ella)\b|^\W*其", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class AnswerReading:
    """What the statements stage makes of an answer."""

    statements: tuple[Statement, ...]  # what faithfulness checks
    # The answer's sentences (a short answer: itself, cleaned), which stand for it in
    # answer relevance, so that each text is embedded once.
    parts: tuple[str, ...]
    # The first part read in the question's frame, for answer relevance: a short
    # answer, or a first sentence that refers back ("It takes forty minutes."), lacks
    # the subject the question names; "" when it has it.
    framed: str
    declines: bool  # nothing asserted, and the answer evades (a refusal)

    @property
    def short(self) -> bool:
        return bool(self.statements) and self.statements[0].short


def read_answer(question: str, answer: str) -> AnswerReading:
    """The answer's statements and parts. A bare answer to a question is one statement
    in the question's frame; an answer whose first sentence opens on a pronoun ("It
    lasts two years.") speaks of what the question asks about, so that sentence's
    embedding is read with the question."""
    parts = answer_parts(answer) if answer else None
    claims = parts.statements if parts else []
    # An evasion: nothing asserted, or every sentence evades (a hedged but committal
    # "I'm not sure of the day, but it opened in 1889" asserts).
    declines = bool(answer) and not claims and (
        (parts is not None and parts.evasive) or is_noncommittal(answer))
    if question and claims and is_short(answer):
        bare = clean_line(answer)
        framed = framed_statement(question, bare)
        return AnswerReading((Statement(framed, short=True, question=question, answer=bare),),
                             (bare,), framed, declines)
    statements = [Statement(c) for c in claims]
    if question and statements and opens_with_pronoun(claims[0]):
        statements[0] = Statement(claims[0], read_as=framed_statement(question, claims[0]))
    texts = tuple(claims) or (answer,)
    first = texts[0] if question else ""
    framed = framed_statement(question, first) if first and refers_back(first) else ""
    return AnswerReading(tuple(statements), texts, framed, declines)


def is_short(answer: str) -> bool:
    """A bare entity, number, date or phrase rather than a sentence of its own."""
    text = answer.strip()
    if not text or _SENTENCE_END.search(text):
        return False
    if _CJK.search(text):
        # "长城主要是为了抵御入侵而修建的。" is a sentence; "1923年" a bare answer.
        return len(text) <= SHORT_CJK_CHARS and not (
            text.endswith(("。", "！", "？")) and len(text) >= SENTENCE_CJK_CHARS)
    words = len(text.split())
    # "Seawater freezes at -2 °C." is a sentence of its own, "Paris." a bare answer.
    return words <= SHORT_WORDS and not (words >= SENTENCE_WORDS and text.endswith("."))


def framed_statement(question: str, answer: str) -> str:
    return f"{question.strip().rstrip('?？ ')}: {answer.strip()}"


def opens_with_pronoun(text: str) -> bool:
    """Whether the sentence's subject is a pronoun ("It lasts two years.")."""
    return bool(_SUBJECT_PRONOUN.search(text))


def refers_back(text: str) -> bool:
    """Whether the sentence opens on a word that refers to something named before it
    ("It lasts two years.", "Its founder, ...")."""
    return opens_with_pronoun(text) or bool(_REFERS_BACK.search(text))


@dataclass(frozen=True, slots=True)
class AnswerParts:
    statements: list[str]  # what the answer asserts, cleaned of its wrapping
    evasive: bool  # some dropped sentence evades the question or says the passages lack it


def clean_line(text: str) -> str:
    """A sentence without markdown and citations."""
    text = _MARKDOWN_LINE.sub("", text)
    text = _EMPHASIS.sub("", text)
    text = _CITATION.sub("", text)
    return re.sub(r"\s{2,}", " ", text).strip()


def answer_parts(answer: str) -> AnswerParts:
    """The answer's statements: its sentences and list items, cleaned, without the
    sentences that say nothing about the world."""
    statements: list[str] = []
    evasive = False
    for raw in split_sentences(answer):
        sentence = _strip_lead_ins(clean_line(raw))
        if not sentence:
            continue
        meta = bool(_META.search(sentence))
        if meta or _is_heading(raw, sentence):
            evasive = evasive or (meta and _says_lacking(sentence))
        elif is_noncommittal(sentence):
            rest = _HEDGE_BUT.sub("", sentence, count=1)  # "I'm not sure, but ..."
            if rest != sentence and len(content_tokens(rest)) >= 2 \
                    and not is_noncommittal(rest):
                statements.append(_capitalised(rest))
            else:
                evasive = True
        elif content_tokens(sentence):
            statements.append(sentence)
    return AnswerParts(statements, evasive)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _strip_lead_ins(sentence: str) -> str:
    before = None
    while before != sentence:
        before = sentence
        for pattern in (_INTRO_COLON, _LEAD_IN, _CITED_LEAD_IN, _SUMMARY_LEAD):
            stripped = pattern.sub("", sentence, count=1)
            if stripped != sentence and stripped:
                sentence = _capitalised(stripped)
        if _OPENER.match(sentence):
            sentence = _capitalised(_OPENER.sub("", sentence))
    return sentence


def _is_heading(raw: str, sentence: str) -> bool:
    """A markdown heading or a short label line ("Amenities:") that introduces a list."""
    return len(sentence.rstrip(":").split()) <= MAX_HEADING_WORDS and (
        raw.strip().startswith("#") or sentence.endswith(":"))


def _says_lacking(sentence: str) -> bool:
    return not re.match(r"^(?:here|below|the\s+following)\b", sentence, re.IGNORECASE) and \
        not re.search(r"\b(?:hope|let\s+me|feel\s+free|happy|questions)\b", sentence,
                      re.IGNORECASE)
