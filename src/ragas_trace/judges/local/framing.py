"""The built-in checker's measurements of a short answer read in the question's frame
("question: answer", ``statements.read_answer``): it is grounded when
the context holds the answer's facts in a sentence that also answers the question:
the answer's tokens must be there, and that sentence must be (about) the context's
best match for the question, by embedding and by the question's own terms. Within
that sentence the answer must stand in the question's slot: nearer the question's
terms than the sentence's other names or numbers of its kind (to "Who designed the
bridge?", "Maja Berg" in "The engineer Maja Berg designed the bridge in 1929, and the
mayor, Oskar Lind, opened it two years later", not "Oskar Lind"); it should be of the
kind asked for (a number for "when").
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.evidence import ContextSentence, Evidence
from ragas_trace.judges.local.lexicon import (
    ARTICLES,
    CJK_FUNCTION_CHARS,
    CJK_NUMERALS,
    CJK_QUESTION_CHARS,
    LOCATIVE,
    NUMBER_WORDS,
    STOPWORDS,
    Expects,
    capitalises_nouns,
    expectations,
)
from ragas_trace.judges.local.tokens import (
    Kind,
    RarityFn,
    Token,
    Vocabulary,
    content_tokens,
    fold_accents,
    normalise,
    spelled_out,
    weight,
)

_CJK = re.compile(r"[\u3400-\u9fff]")
FRAME_LEXICAL = 0.5  # weight of the question's terms against the embedding's cosine
# The embedding model is English-trained: on Chinese its cosines are mostly noise, so
# there the question's own terms decide.
FRAME_LEXICAL_CJK = 1.5
# The answer's slot: distances in content tokens to the question's terms decay as
# 1 / (1 + (d - 1) / tau), relative to another name or number of its kind in the
# same sentence.
SLOT_TAU, SLOT_TAU_CJK = 3.0, 6.0
# A punctuation mark between two tokens bounds a phrase: it counts as one more token.
PHRASE_GAP = 1.0
_PHRASE_MARK = re.compile(r"[,;:()\[\]—–，、；：（）]")


SHORT_FEATURES = ("coverage", "verbatim", "frame", "slot", "kind_fit")


@dataclass(frozen=True, slots=True)
class FramedSupport:
    features: dict[str, float]  # the evidence, for the fitted short-answer model
    reason: str


def _share(tokens: list[Token], vocabulary: Vocabulary, weigh: Callable[[Token], float]
           ) -> float:
    total = sum(weigh(t) for t in tokens)
    if not total:
        return 0.0
    return sum(weigh(t) for t in tokens if t in vocabulary) / total


def _held(tokens: list[Token], sentence: tuple[Token, ...], weigh: Callable[[Token], float]
          ) -> float:
    # Its counts in words too: "about three hours" holds "3 hours".
    own = Vocabulary(sentence + tuple(spelled_out(sentence)))
    total = sum(weigh(t) for t in tokens)
    found = sum(weigh(t) for t in tokens
                if (t.key in own.keys if t.kind is not Kind.WORD else t in own))
    return found / total if total else 0.0


def _specificity(tokens: list[Token], evidence: Evidence, rarity: RarityFn
                 ) -> Callable[[Token], float]:
    """Weights for the question's terms: by rarity, and by how few context sentences
    hold them (the topic, "Normans" in a passage about them, tells no sentence from
    another; "religion" does)."""
    n = len(evidence.sentences)
    found = {t.key: max(1, sum(1 for s in evidence.sentences if t in s.vocabulary))
             for t in tokens}
    scale = math.log(1 + n)
    return lambda t: weight(t, rarity) * (
        math.log(1 + n / found.get(t.key, 1)) / scale if n > 1 else 1.0)


def framed_support(question: str, q_vector: Vectors, answer: str, evidence: Evidence,
                   sentence_vectors: Vectors, rarity: RarityFn) -> FramedSupport | None:
    """Support of "question: answer" by the context; ``None`` when the answer has no
    content token to look for (a bare "yes")."""
    # Read as the continuation of the question's sentence: "France" is a name there,
    # not a sentence-initial word.
    answer_tokens = content_tokens(answer) if _CJK.search(answer) else \
        [t for t in content_tokens("x " + answer) if t.start > 0]
    # A function word it opens with ("An der RWTH Aachen") names nothing; one that is
    # all of it is a name ("Seine").
    while len(answer_tokens) > 1 and normalise(answer_tokens[0].text) in STOPWORDS | ARTICLES:
        answer_tokens = answer_tokens[1:]
    if not answer_tokens or not evidence.sentences:
        return None
    answer_keys = {t.key for t in answer_tokens}
    missing = [t for t in answer_tokens if t not in evidence.vocabulary]
    absent = set(missing)  # a set: an answer of one long "word" has thousands of tokens
    present = [t for t in answer_tokens if t not in absent]
    def by_rarity(t: Token) -> float:
        return weight(t, rarity)

    coverage = _share(answer_tokens, evidence.vocabulary, by_rarity)
    cjk = bool(_CJK.search(question))
    skip = CJK_FUNCTION_CHARS | CJK_QUESTION_CHARS
    asked_terms = [t for t in content_tokens(question) if not skip.intersection(t.key)]
    question_tokens = [t for t in asked_terms if t.key not in answer_keys]
    lexical = FRAME_LEXICAL_CJK if cjk else FRAME_LEXICAL
    # A term's weight does not depend on the others': one table serves both readings.
    specific = _specificity(asked_terms, evidence, rarity)
    cosines = sentence_vectors @ q_vector
    frames = [float(cosines[i]) + lexical * _share(question_tokens, s.vocabulary, specific)
              for i, s in enumerate(evidence.sentences)]
    kinds = expectations(question)
    # Held by the sentence's own words, not by the names a pronoun in it refers to.
    # A name or number must be there as it is: "France" is not held by "Francia".
    holding = [i for i, s in enumerate(evidence.sentences)
               if present and _held(present, s.tokens, by_rarity) >= 0.5]
    base = {"coverage": coverage, "verbatim": float(_verbatim(answer, evidence))}
    if not holding:
        return FramedSupport(base | {"frame": 0.0, "slot": 0.0, "kind_fit": 1.0},
                             "the answer's words are not together in any context "
                             "sentence")
    at = max(holding, key=frames.__getitem__)
    slot, rival = _slot(evidence.sentences[at], answer_tokens,
                        Vocabulary(content_tokens(question)), question_tokens, specific,
                        SLOT_TAU_CJK if cjk else SLOT_TAU)
    kind_fit, unlike = _kind_fit(kinds, answer_tokens, answer)
    features = base | {"frame": frames[at], "slot": slot, "kind_fit": float(kind_fit)}
    parts = [f"read with the question; the context sentence holding it matches the "
             f"question {frames[at]:.2f}"]
    if unlike:
        parts.append(unlike)
    if rival:
        parts.append(f'"{rival}" stands nearer the question\'s terms there '
                     f"(the answer {slot:.0%} as near)")
    if missing:
        parts.append(f"{coverage:.0%} of its content words are in the context; not in "
                     "the context: " + ", ".join(t.text for t in missing))
    return FramedSupport(features, "; ".join(parts))


def _verbatim(answer: str, evidence: Evidence) -> bool:
    """Whether the answer, as written (case and spacing aside), is a span of the
    context."""
    wanted = " ".join(fold_accents(normalise(answer)).strip(" .!?。").split())
    return bool(wanted) and any(wanted in " ".join(fold_accents(normalise(s.text)).split())
                                for s in evidence.sentences)


def _kind_fit(kinds: frozenset[Expects], answer_tokens: list[Token], answer: str
              ) -> tuple[bool, str]:
    """Whether the answer is of the kind the question asks for (not "dukes" to "When
    ...?", "1066" to "Who ...?"), with what it lacks; (True, "") when it fits
    or the question asks for no kind."""
    numbers = [t for t in answer_tokens if t.kind is Kind.NUMBER]
    if Expects.NUMBER in kinds and not numbers and not any(
            normalise(t.text) in NUMBER_WORDS or CJK_NUMERALS.intersection(t.text)
            for t in answer_tokens):
        return False, "no number or date, which the question asks for"
    if Expects.NAME in kinds and not any(t.kind is Kind.NAME for t in answer_tokens):
        return False, "no name, which the question asks for"
    if Expects.PLACE in kinds and not any(t.kind is Kind.NAME for t in answer_tokens) \
            and not LOCATIVE.search(answer):
        return False, "no name or phrase of place, which the question asks for"
    return True, ""


def _closeness(positions: list[int], tokens: tuple[Token, ...], marks: list[int],
               wanted: dict[str, float], tau: float) -> float | None:
    """How near the tokens at ``positions`` stand to the question's terms in the
    sentence: the weighted mean, over those terms, of 1 / (1 + (distance - 1) / tau)
    (1.0 when every term is adjacent), where each punctuation mark between them
    (``marks``: how many stand before each token) counts as ``PHRASE_GAP`` tokens;
    ``None`` when the sentence has none of them."""
    distance: dict[str, float] = {}
    for i, t in enumerate(tokens):
        if t.key in wanted:
            distance[t.key] = min(distance.get(t.key, float(len(tokens) * (1 + PHRASE_GAP))),
                                  min(abs(i - j) + PHRASE_GAP * abs(marks[i] - marks[j])
                                      for j in positions))
    total = sum(wanted[k] for k in distance)
    if not total:
        return None
    return sum(wanted[k] / (1.0 + (d - 1) / tau) for k, d in distance.items()) / total


def _slot(sentence: ContextSentence, answer_tokens: list[Token], asked: Vocabulary,
          question_tokens: list[Token], weigh: Callable[[Token], float], tau: float
          ) -> tuple[float, str]:
    """Whether the answer sits in the sentence's slot for the question: how near its
    names or numbers stand to the question's terms, relative to the nearest other name
    or number of the same kind in that sentence (the sliding-window heuristic of
    extractive QA), with that rival's text when it stands nearer (1.0 and "" when
    the sentence has no rival or none of the question's terms)."""
    kind = next((k for k in (Kind.NUMBER, Kind.NAME)
                 if any(t.kind is k for t in answer_tokens)), None)
    if kind is None or (kind is Kind.NAME and capitalises_nouns(sentence.text)):
        return 1.0, ""
    keys = {t.key for t in answer_tokens if t.kind is kind}
    tokens = sentence.tokens
    own = [i for i, t in enumerate(tokens) if t.key in keys]
    # Rivals: runs of adjacent tokens of the answer's kind that neither the answer nor
    # the question has ("Oskar Lind" beside "Maja Berg" in one sentence).
    runs: list[list[int]] = []
    for i, t in enumerate(tokens):
        if t.kind is kind and t.key not in keys and t not in asked:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
    if not own or not runs:
        return 1.0, ""
    # Punctuation bounds a phrase: in "the mayor, Oskar Lind, opened it" the name
    # belongs to another phrase than a term beyond the commas.
    at = [m.start() for m in _PHRASE_MARK.finditer(sentence.text)]
    marks = [bisect.bisect_left(at, t.start) for t in tokens]
    wanted = {t.key: weigh(t) for t in question_tokens}
    mine = _closeness(own, tokens, marks, wanted, tau)
    if mine is None:
        return 1.0, ""
    best, rival = mine, ""
    for run in runs:
        near = _closeness(run, tokens, marks, wanted, tau) or 0.0
        if near > best:
            best, rival = near, " ".join(tokens[i].text for i in run)
    return mine / best, rival
