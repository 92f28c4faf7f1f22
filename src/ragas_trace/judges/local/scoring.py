"""Answer relevance and context relevance, approximated from sentence embeddings
and token grounding (faithfulness: ``features`` and ``support_model``).

Each per-item judgement (a context sentence needed) is a degree in [0, 1] rather than
a yes/no, and a metric is the mean degree: the expected share of needed sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    vague_count,
    weight,
)

# Cosine similarities of all-MiniLM-L6-v2: paraphrases sit above ~0.65, text on the
# same topic around 0.3 to 0.5, unrelated text below 0.2.
NEED_FLOOR, NEED_FULL = 0.30, 0.60
ANSWER_FLOOR, ANSWER_FULL = 0.20, 0.70
# Per placeholder word ("someone", "something") in an answer, counted per statement:
# a long answer's "some" and "many" are not each a statement's worth of evasion.
VAGUE_FACTOR = 0.75
UNMET_EXPECTATION_FACTOR = 0.5  # a "when" question answered without any date...
# ...and a part of a compound question that no sentence of the answer answers, by
# degrees: none near it (unrelated, as for ANSWER_FLOOR) counts whole, one at the top
# of the same-topic band counts not at all. A part lacks its subject ("what is its
# elevation"): the sentence answering it is often only on its topic.
PART_FLOOR, PART_FULL = ANSWER_FLOOR, 0.50
NAMED = 3  # a reason names this many invented facts or unanswered parts at most
LEXICAL_WEIGHT = 0.2  # share of the question's terms a context sentence contains
LACKS_EXPECTED_PENALTY = 0.15  # a sentence without the kind of fact the question asks
RELATIVE_FLOOR, RELATIVE_FULL = 0.30, 0.10  # needed: within 0.1 of the best sentence


def _ramp(value: float, low: float, high: float) -> float:
    return float(min(1.0, max(0.0, (value - low) / (high - low))))


def _weighted(tokens: Sequence[Token], rarity: RarityFn) -> float:
    return sum(weight(t, rarity) for t in tokens)


def answer_relevance(
    question: str, similarity: float, answer: str, rarity: RarityFn, statements: int = 1,
    parts: Sequence[tuple[str, float]] = (),
) -> tuple[float, str]:
    """Closeness of question and answer, discounted when the answer adds nothing the
    question did not already say, uses placeholders, or lacks the kind of fact the
    question asks for (a date for "when", a name for "who"). The question and the
    answer only: whether the passages hold what it adds is faithfulness's matter (the
    paper's answer relevance "does not take into account factuality").
    ``statements``: how many the answer makes.
    ``parts``: each part of a compound question with the cosine of the answer's
    sentence nearest it; the paper's answer relevance penalises an incomplete answer."""
    # A good answer is not a paraphrase of its question: its cosine with it reaches
    # ~0.7 at best, where the paper compares questions with questions.
    closeness = _ramp(similarity, ANSWER_FLOOR, ANSWER_FULL)
    question_vocabulary = Vocabulary(content_tokens(question))
    answer_tokens = content_tokens(answer)
    # "No." or "No, it isn't." to "Is the battery covered?" answers all that was
    # asked, while its vector, of a word or two, is near no question.
    if replies_yes_no(question, answer) and all(
            normalise(t.text) in YES_NO_WORDS or is_negated(t.text) for t in answer_tokens):
        closeness = 1.0
    new = [t for t in answer_tokens
           if t not in question_vocabulary and normalise(t.text) not in VAGUE_WORDS
           and not CJK_FUNCTION_CHARS.intersection(t.text)]
    # A capitalised word names something ("Paris is the capital ..."): it weighs as a
    # name even where it opens the sentence, which keeps it from the name kind.
    new_weight = sum(1.0 if t.text[:1].isupper() else weight(t, rarity) for t in new)
    informativeness = new_weight / (new_weight + 1.0)
    options = alternatives(question)
    chooses = options is not None and _chooses(answer, answer_tokens, options)
    # "Jupiter or Saturn?" - "Jupiter is": picking one is the answer; so is "Yes, ..."
    # to "Is the battery covered?", which need add no word the question lacks.
    if chooses or replies_yes_no(question, answer):
        informativeness = 1.0
    vague = vague_count(answer)
    # The alternatives are of the kind asked ("Who is older, A or B?"): picking one of
    # them meets it, though the question already names it.
    unmet = [] if chooses else [kind for kind in expectations(question)
                                if not meets(kind, new, answer)]
    unanswered = [(part, 1.0 - _ramp(cosine, PART_FLOOR, PART_FULL)) for part, cosine in parts]
    per = max(1, statements)
    value = closeness * (0.5 + 0.5 * informativeness) * VAGUE_FACTOR ** (vague / per) \
        * UNMET_EXPECTATION_FACTOR ** (len(unmet) + sum(u for _, u in unanswered))
    notes = [f"question-answer similarity {similarity:.2f}",
             f"new content weight {new_weight:.1f}"]
    if chooses:
        notes.append("picks one of the alternatives asked about")
    if vague:
        notes.append(f"{vague} placeholder word(s)")
    if unmet:
        notes.append("no " + " or ".join(k.value for k in unmet) + " the question asks for")
    if missed := [f'"{part}"' for part, u in unanswered if u >= 0.5]:
        notes.append("no answer to: " + _named(missed, "; "))
    return value, "; ".join(notes)


def _named(items: Sequence[str], separator: str) -> str:
    """The first ``NAMED`` items, and how many more: a reason stays short (spans keep
    its first 200 characters) whatever the answer's length."""
    more = f" and {len(items) - NAMED} more" if len(items) > NAMED else ""
    return separator.join(items[:NAMED]) + more


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


def sentence_need(
    questions: Sequence[tuple[str, Vectors]], evidence: Evidence, vectors: Vectors,
    rarity: RarityFn,
) -> list[float]:
    """For each context sentence, how far it is needed to answer the question or one
    of its parts: its cosine with the (part of the) question plus a share of that
    question's own terms that it contains, counted in full near the best sentence for
    that part. The relative test matters where the model compresses similarities
    (Chinese), so that everything looks alike in absolute terms."""
    needs = [0.0] * len(evidence.sentences)
    paired = with_antecedents(evidence, vectors)
    for question, q_vector in questions:
        question_tokens = content_tokens(question)
        total = _weighted(question_tokens, rarity)
        similarities = np.maximum(vectors @ q_vector, paired @ q_vector - PAIR_DISCOUNT)
        bearing = [
            float(similarity) + LEXICAL_WEIGHT * (
                _weighted([t for t in question_tokens if t in sentence.vocabulary], rarity)
                / total if total else 0.0)
            for sentence, similarity in zip(evidence.sentences, similarities, strict=True)
        ]
        # "When was it completed?" is answered by the sentence with the date in it, not
        # by the one that shares the most words with the question.
        kinds = expectations(question)
        asked = Vocabulary(question_tokens)
        bearing = [b - LACKS_EXPECTED_PENALTY * sum(
                       1 for kind in kinds
                       if not meets(kind, [t for t in sentence.tokens if t not in asked],
                                 sentence.text))
                   for b, sentence in zip(bearing, evidence.sentences, strict=True)]
        best = max(bearing, default=0.0)
        needs = [max(need, min(_ramp(b, NEED_FLOOR, NEED_FULL),
                               _ramp(b, best - RELATIVE_FLOOR, best - RELATIVE_FULL)))
                 for need, b in zip(needs, bearing, strict=True)]
    return needs
