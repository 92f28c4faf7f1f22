"""Answer relevance and context relevance, approximated from sentence embeddings
and token grounding (faithfulness: ``features`` and ``support_model``).

Each per-item judgement (a context sentence needed) is a degree in [0, 1] rather than
a yes/no, and a metric is the mean degree: the expected share of needed sentences.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.evidence import PAIR_DISCOUNT, Evidence, with_antecedents
from ragas_trace.judges.local.lexicon import (
    CJK_FUNCTION_CHARS,
    CJK_NUMERALS,
    COMPARISON,
    LOCATIVE,
    NUMBER_WORDS,
    VAGUE_WORDS,
    YES_NO_WORDS,
    Expects,
    alternatives,
    expectations,
    replies_yes_no,
)
from ragas_trace.judges.local.negation import is_negated
from ragas_trace.judges.local.tokens import (
    Kind,
    RarityFn,
    Token,
    Vocabulary,
    clause_groups,
    content_tokens,
    normalise,
    weight,
)

NAMED = 3  # a reason names this many unanswered parts at most
RELEVANCE_FILE = Path(__file__).with_name("data") / "relevance_model.json"


@dataclass(frozen=True)
class AnswerParameters:
    """Fitted by ``tools/fit_relevance.py`` (``data/relevance_model.json``). Cosines of
    all-MiniLM-L6-v2: paraphrases sit above ~0.65, text on the same topic around 0.3
    to 0.5, unrelated text below 0.2."""

    floor: float  # question-answer cosine ramp: nothing below, whole above ``full``
    full: float
    informative_share: float  # of the value that rests on the answer adding content
    unmet_factor: float  # per kind of fact asked and not given, or part not answered
    part_floor: float  # a part of a compound question answered: cosine ramp
    part_full: float


@dataclass(frozen=True)
class ContextParameters:
    """Fitted likewise: how far a context sentence is needed."""

    need_floor: float  # a sentence's bearing on the question: ramp to "needed"
    need_full: float
    lexical_weight: float  # share of the question's terms the sentence contains
    lacks_expected_penalty: float  # per kind of fact asked that the sentence lacks
    relative_floor: float  # needed in full within ``relative_full`` of the best
    relative_full: float


@dataclass(frozen=True)
class AnswerFeatures:
    """What answer relevance reads of a question and an answer, before any parameter."""

    similarity: float
    chooses: bool  # names one of the alternatives the question offers
    answers_yes_no: bool  # a bare yes/no to a yes/no question: close whatever its cosine
    informativeness: float  # 1 where the answer picks an alternative or replies yes/no
    new_weight: float
    unmet: tuple[Expects, ...]
    parts: tuple[tuple[str, float], ...]  # a part of the question, cosine of its answer


@cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(RELEVANCE_FILE.read_text(encoding="utf-8"))
    return document


@cache
def parameters() -> tuple[AnswerParameters, ContextParameters]:
    document = _document()
    return (AnswerParameters(**document["answer"]),
            ContextParameters(**document["context"]))


def relevance_thresholds() -> dict[str, float]:
    """The pass thresholds fitted with the parameters (``answer_relevance``,
    ``context_relevance``)."""
    return {name: float(value) for name, value in _document()["thresholds"].items()}


def _ramp(value: float, low: float, high: float) -> float:
    return float(min(1.0, max(0.0, (value - low) / (high - low))))


def _weighted(tokens: Sequence[Token], rarity: RarityFn) -> float:
    return sum(weight(t, rarity) for t in tokens)


def answer_relevance(
    question: str, similarity: float, answer: str, rarity: RarityFn,
    parts: Sequence[tuple[str, float]] = (),
) -> tuple[float, str]:
    """Closeness of question and answer, discounted when the answer adds nothing the
    question did not already say, or lacks the kind of fact the
    question asks for (a date for "when", a name for "who"). The question and the
    answer only: whether the passages hold what it adds is faithfulness's matter (the
    paper's answer relevance "does not take into account factuality").
    ``parts``: each part of a compound question with the cosine of the answer's
    sentence nearest it; the paper's answer relevance penalises an incomplete answer."""
    features, p = answer_features(question, similarity, answer, rarity, parts), parameters()[0]
    return answer_value(features, p), answer_reason(features, p)


def answer_features(
    question: str, similarity: float, answer: str, rarity: RarityFn,
    parts: Sequence[tuple[str, float]] = (),
) -> AnswerFeatures:
    question_vocabulary = Vocabulary(content_tokens(question))
    answer_tokens = content_tokens(answer)
    # "No." or "No, it isn't." to "Is the battery covered?" answers all that was
    # asked, while its vector, of a word or two, is near no question.
    yes_no = replies_yes_no(question, answer)
    bare_yes_no = yes_no and all(
        normalise(t.text) in YES_NO_WORDS or is_negated(t.text) for t in answer_tokens)
    new = [t for t in answer_tokens
           if t not in question_vocabulary and normalise(t.text) not in VAGUE_WORDS
           and not CJK_FUNCTION_CHARS.intersection(t.text)]
    # A capitalised word names something ("Paris is the capital ..."): it weighs as a
    # name even where it opens the sentence, which keeps it from the name kind.
    new_weight = sum(1.0 if t.text[:1].isupper() else weight(t, rarity) for t in new)
    options = alternatives(question)
    chooses = options is not None and _chooses(answer, answer_tokens, options)
    # "Jupiter or Saturn?" - "Jupiter is": picking one is the answer; so is "Yes, ..."
    # to "Is the battery covered?", which need add no word the question lacks.
    informativeness = 1.0 if chooses or yes_no else new_weight / (new_weight + 1.0)
    # The alternatives are of the kind asked ("Who is older, A or B?"): picking one of
    # them meets it, though the question already names it.
    unmet = () if chooses else tuple(kind for kind in expectations(question)
                                     if not meets(kind, new, answer))
    return AnswerFeatures(similarity, chooses, bare_yes_no, informativeness, new_weight,
                          unmet, tuple(parts))


def answer_value(f: AnswerFeatures, p: AnswerParameters) -> float:
    closeness = 1.0 if f.answers_yes_no else _ramp(f.similarity, p.floor, p.full)
    unanswered = sum(_unanswered(cosine, p) for _, cosine in f.parts)
    value = closeness * (1.0 - p.informative_share + p.informative_share * f.informativeness)
    return float(value * p.unmet_factor ** (len(f.unmet) + unanswered))


def answer_reason(f: AnswerFeatures, p: AnswerParameters) -> str:
    notes = [f"question-answer similarity {f.similarity:.2f}",
             f"new content weight {f.new_weight:.1f}"]
    if f.chooses:
        notes.append("picks one of the alternatives asked about")
    if f.unmet:
        notes.append("no " + " or ".join(k.value for k in f.unmet) + " the question asks for")
    if missed := [f'"{part}"' for part, cosine in f.parts if _unanswered(cosine, p) >= 0.5]:
        # The first few and how many more: a reason stays short (spans keep its first
        # 200 characters) whatever the answer's length.
        more = f" and {len(missed) - NAMED} more" if len(missed) > NAMED else ""
        notes.append("no answer to: " + "; ".join(missed[:NAMED]) + more)
    return "; ".join(notes)


def _unanswered(cosine: float, p: AnswerParameters) -> float:
    """How far a part of the question is left unanswered by the answer's nearest
    sentence (its cosine with the part)."""
    return 1.0 - _ramp(cosine, p.part_floor, p.part_full)


def _chooses(answer: str, tokens: Sequence[Token], options: tuple[str, str]) -> bool:
    """Whether some clause of the answer names exactly one of the two options, or
    both with a comparison between them ("gold is heavier than silver")."""
    keys = [{t.key for t in content_tokens("x " + option)} for option in options]
    if not all(keys):
        return False
    # "Camlaren Mine or Barton Mine?" - "Barton Mine": the word both options share
    # names neither of them.
    keys = [own - other or own for own, other in ((keys[0], keys[1]), (keys[1], keys[0]))]
    for clause in clause_groups(answer, tokens):
        found = [[t for t in clause if t.key in k] for k in keys]
        if sum(1 for f in found if f) == 1:
            return True
        if all(found):
            first, second = sorted((found[0][0].start, found[1][0].start))
            if COMPARISON.search(answer[first:second]):
                return True
    return False


def meets(kind: Expects, new: Sequence[Token], text: str) -> bool:
    """Whether the tokens (of ``text``) hold the kind of fact a question asks for."""
    if kind is Expects.NUMBER:  # "three hours" answers "how long" as "3 hours" does
        return any(t.kind is Kind.NUMBER or normalise(t.text) in NUMBER_WORDS
                   or CJK_NUMERALS.intersection(t.text) for t in new)
    if kind in (Expects.NAME, Expects.PLACE):
        return any(t.kind is Kind.NAME or (t.kind is Kind.WORD and t.text[:1].isupper())
                   for t in new) or (kind is Expects.PLACE and bool(LOCATIVE.search(text)))
    return True


@dataclass(frozen=True)
class Bearing:
    """What a question's part reads of each context sentence, before any parameter."""

    similarity: tuple[float, ...]  # cosine with the part (or with a sentence pair)
    lexical: tuple[float, ...]  # weighted share of the part's terms the sentence holds
    lacking: tuple[int, ...]  # kinds of fact the part asks for that the sentence lacks


def sentence_need(
    questions: Sequence[tuple[str, Vectors]], evidence: Evidence, vectors: Vectors,
    rarity: RarityFn,
) -> list[float]:
    """For each context sentence, how far it is needed to answer the question or one
    of its parts: its cosine with the (part of the) question plus a share of that
    question's own terms that it contains, counted in full near the best sentence for
    that part. The relative test matters where the model compresses similarities
    (Chinese), so that everything looks alike in absolute terms."""
    return needs_of(bearings(questions, evidence, vectors, rarity), len(evidence.sentences),
                    parameters()[1])


def bearings(
    questions: Sequence[tuple[str, Vectors]], evidence: Evidence, vectors: Vectors,
    rarity: RarityFn,
) -> list[Bearing]:
    paired = with_antecedents(evidence, vectors)
    out = []
    for question, q_vector in questions:
        question_tokens = content_tokens(question)
        total = _weighted(question_tokens, rarity)
        similarities = np.maximum(vectors @ q_vector, paired @ q_vector - PAIR_DISCOUNT)
        # "When was it completed?" is answered by the sentence with the date in it, not
        # by the one that shares the most words with the question.
        kinds = expectations(question)
        asked = Vocabulary(question_tokens)
        out.append(Bearing(
            tuple(float(x) for x in similarities),
            tuple(_weighted([t for t in question_tokens if t in sentence.vocabulary], rarity)
                  / total if total else 0.0 for sentence in evidence.sentences),
            tuple(sum(1 for kind in kinds
                      if not meets(kind, [t for t in sentence.tokens if t not in asked],
                                   sentence.text))
                  for sentence in evidence.sentences)))
    return out


def needs_of(found: Sequence[Bearing], sentences: int, p: ContextParameters) -> list[float]:
    needs = [0.0] * sentences
    for b in found:
        bearing = [s + p.lexical_weight * x - p.lacks_expected_penalty * k
                   for s, x, k in zip(b.similarity, b.lexical, b.lacking, strict=True)]
        best = max(bearing, default=0.0)
        needs = [max(need, min(_ramp(v, p.need_floor, p.need_full),
                               _ramp(v, best - p.relative_floor, best - p.relative_full)))
                 for need, v in zip(needs, bearing, strict=True)]
    return needs
