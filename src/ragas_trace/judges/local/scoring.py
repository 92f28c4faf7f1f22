"""The three metrics, approximated from sentence embeddings and token grounding.

Each per-item judgement (a statement supported, a context sentence needed) is a
degree in [0, 1] rather than a yes/no, and a metric is the mean degree: the expected
share of supported statements or needed sentences. Verdicts shown to the user are
those degrees cut at one half.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ragas_trace.judges.local.comparisons import reversed_comparisons
from ragas_trace.judges.local.embedder import Vectors
from ragas_trace.judges.local.evidence import PAIR_DISCOUNT, Evidence, with_antecedents
from ragas_trace.judges.local.lexicon import (
    CJK_FUNCTION_CHARS,
    COMPARISON,
    VAGUE_WORDS,
    Expects,
    alternatives,
    expectations,
)
from ragas_trace.judges.local.negation import is_negated
from ragas_trace.judges.local.substitution import substitutions
from ragas_trace.judges.local.tokens import (
    Kind,
    RarityFn,
    Token,
    Vocabulary,
    clause_groups,
    clauses,
    content_tokens,
    normalise,
    vague_count,
    weight,
)

# Cosine similarities of all-MiniLM-L6-v2: paraphrases sit above ~0.65, text on the
# same topic around 0.3 to 0.5, unrelated text below 0.2.
SIM_FLOOR, SIM_FULL = 0.30, 0.65
NEED_FLOOR, NEED_FULL = 0.30, 0.60
ANSWER_FLOOR, ANSWER_FULL = 0.20, 0.70
MISSING_FACT_FACTOR = 0.25  # per number or name absent from the context
# Per unit of rarity weight of the statement's words absent from the context: an
# invented word counts however long the sentence around it ("... which began in the
# reign of Charles" for "... in 911") - a share of all words would dilute it.
MISSING_WORD_FACTOR = 0.8
# A statement whose every content token the context holds is supported to this degree
# at least, however its relations fare (embedding, placement): so that a statement with
# something the context lacks never outranks it, as with the plain share of grounded
# words, which is hard to beat where hallucinations bring in new facts.
GROUNDED_FLOOR = 0.3
# An invented name or number must not make an answer look more to the point than the
# grounded one it replaces: a mild discount each (faithfulness judges it in full).
UNSUPPORTED_FACT_FACTOR = 0.8
VAGUE_FACTOR = 0.75  # per placeholder word ("someone", "something") in an answer
UNMET_EXPECTATION_FACTOR = 0.5  # a "when" question answered without any date...
# Words put in place of the followed context sentence's own: below this cosine between
# the two spans another fact (a missing fact's discount), above the next a paraphrase.
# Out of context single words are far apart even when synonyms ("held" and "take
# place" 0.35 to 0.47), other facts further ("storm" and "difficulty" under 0.3).
CHANGED_BELOW, PARAPHRASE_ABOVE = 0.25, 0.40
# On words the model knows only as pieces (most German, French and Spanish ones,
# Chinese) its cosines are compressed noise (unrelated spans reach 0.45): there only
# a near match is a paraphrase.
UNKNOWN_SHIFT = 0.25
_WORD = re.compile(r"[^\W\d_]+")
LEXICAL_WEIGHT = 0.2  # share of the question's terms a context sentence contains
LACKS_EXPECTED_PENALTY = 0.15  # a sentence without the kind of fact the question asks
RELATIVE_FLOOR, RELATIVE_FULL = 0.30, 0.10  # needed: within 0.1 of the best sentence


@dataclass(frozen=True, slots=True)
class Support:
    degree: float
    reason: str


def _ramp(value: float, low: float, high: float) -> float:
    return float(min(1.0, max(0.0, (value - low) / (high - low))))


def _weighted(tokens: Sequence[Token], rarity: RarityFn) -> float:
    return sum(weight(t, rarity) for t in tokens)


SimilarityFn = Callable[[str, str], float]
KnownFn = Callable[[str], bool]


def statement_support(
    statement: str, vector: Vectors, evidence: Evidence, units: Vectors, rarity: RarityFn,
    similarity_of: SimilarityFn | None = None, known: KnownFn | None = None,
) -> Support:
    """How far the context supports one statement: closeness to the nearest context
    sentence (or pair of adjacent sentences), times the share of its content words
    found in the context, divided down for each number or name the context lacks, for
    facts that occur only in sentences about something else, and for words put in
    place of other words of the context sentence the statement follows, unless
    ``similarity_of`` (the cosine of two short texts) finds them alike in meaning;
    ``known`` tells the words the model knows whole, whose cosines mean more."""
    similarities = units @ vector
    nearest = int(np.argmax(similarities)) if len(units) else -1
    similarity = float(similarities[nearest]) if len(units) else 0.0
    closeness = _ramp(similarity, SIM_FLOOR, SIM_FULL)
    # The nearest unit is one sentence or, past the sentences, a pair of neighbours.
    n = len(evidence.sentences)
    near_text = evidence.sentences[nearest].text if 0 <= nearest < n else " ".join(
        s.text for s in evidence.sentences[nearest - n:nearest - n + 2])
    denies = nearest >= 0 and is_negated(statement) != is_negated(near_text)
    tokens = content_tokens(statement)
    missing = [t for t in tokens if t not in evidence.vocabulary]
    missing_facts = [t for t in missing if t.kind is not Kind.WORD]
    total = _weighted(tokens, rarity)
    coverage = 1.0 - _weighted([t for t in missing if t.kind is Kind.WORD], rarity) / total \
        if total else 1.0
    placement, misplaced = _placement(statement, tokens, missing, evidence, rarity)
    turned = [name for clause in clauses(statement)
              for name in reversed_comparisons(clause, evidence.comparisons)]
    missing_words = [t for t in missing if t.kind is Kind.WORD]
    changed = []
    if similarity_of is not None:
        for swap in substitutions(statement, tokens, missing, evidence):
            alike = similarity_of(swap.said, swap.instead)
            if known is not None and not all(
                    known(w) for w in _WORD.findall(f"{swap.said} {swap.instead}")):
                alike -= UNKNOWN_SHIFT
            if alike < PARAPHRASE_ABOVE:
                changed.append((swap, alike))
    # Another fact in the sentence's place counts as a missing one, a near synonym not.
    changes = float(np.prod([
        MISSING_FACT_FACTOR + (1.0 - MISSING_FACT_FACTOR)
        * _ramp(alike, CHANGED_BELOW, PARAPHRASE_ABOVE) for _, alike in changed]))
    # A misplaced fact, a reversed comparison or a denial is evidence against the
    # statement, not a weak relation: it discounts the whole degree.
    degree = supported_degree(grounding(coverage, missing_facts, missing_words, rarity),
                              closeness) \
        * placement * MISSING_FACT_FACTOR ** (len(turned) + denies) * changes
    parts = [f"closest context similarity {similarity:.2f}"]
    if denies:
        parts.append("the closest context sentence "
                     + ("affirms what it denies" if is_negated(statement) else
                        "denies what it affirms"))
    if missing_facts:
        parts.append("not in the context: " + ", ".join(t.text for t in missing_facts))
    if coverage < 1.0:
        parts.append(f"{coverage:.0%} of its content words are in the context")
    if changed:
        parts.append("says " + ", ".join(f'"{swap.said}" where the context says '
                                         f'"{swap.instead}"' for swap, _ in changed))
    if turned:
        parts.append("the context compares the other way round: " + ", ".join(turned))
    if misplaced:
        parts.append("in the context only in sentences about something else: "
                     + ", ".join(misplaced))
    return Support(degree, "; ".join(parts))


def grounding(coverage: float, missing_facts: Sequence[Token], missing_words: Sequence[Token],
              rarity: RarityFn) -> float:
    """How far the context holds a statement's content tokens (1.0: all of them):
    the share of its words found, divided down for each absent name or number and by
    the rarity of each absent word."""
    return float(coverage * MISSING_FACT_FACTOR ** len(missing_facts)
                 * MISSING_WORD_FACTOR ** _weighted(missing_words, rarity))


def supported_degree(grounded: float, relation: float) -> float:
    """A statement's support: its grounding, times how well its relations hold
    (``relation``, in [0, 1]) above ``GROUNDED_FLOOR``."""
    return grounded * (GROUNDED_FLOOR + (1.0 - GROUNDED_FLOOR) * relation)


def _placement(
    statement: str, tokens: Sequence[Token], missing: Sequence[Token], evidence: Evidence,
    rarity: RarityFn,
) -> tuple[float, list[str]]:
    """For the statement's worst-placed fact, how well the context sentence that holds
    the fact also holds the rest of the clause. Catches facts borrowed from elsewhere in
    the context ("Gray was granted the patent" when the context grants it to Bell)."""
    missing_keys = {t.key for t in missing}
    degrees: list[float] = []
    misplaced: list[str] = []
    for clause in clause_groups(statement, tokens):
        grounded = [t for t in clause if t.key not in missing_keys]
        for fact in (t for t in grounded if t.kind is not Kind.WORD):
            others = [t for t in grounded if t.key != fact.key]
            total = _weighted(others, rarity)
            if not total:
                continue
            best = max(
                (_weighted([o for o in others if o in s.vocabulary], rarity) / total
                 for s in evidence.sentences if fact in s.vocabulary),
                default=0.0,
            )
            degree = min(1.0, 2.0 * best)  # half the clause beside the fact is enough
            degrees.append(degree)
            if degree < 0.5:
                misplaced.append(fact.text)
    return min(degrees, default=1.0), misplaced


def answer_relevance(
    question: str, similarity: float, answer: str, grounded: Vocabulary | None,
    rarity: RarityFn,
) -> tuple[float, str]:
    """Closeness of question and answer, discounted when the answer adds nothing the
    question did not already say, uses placeholders, or lacks the kind of fact the
    question asks for (a date for "when", a name for "who"). What the answer adds
    counts only where the context (``grounded``, when there is one) has it: content
    the context lacks is never rewarded."""
    # A good answer is not a paraphrase of its question: its cosine with it reaches
    # ~0.7 at best, where the paper compares questions with questions.
    closeness = _ramp(similarity, ANSWER_FLOOR, ANSWER_FULL)
    question_vocabulary = Vocabulary(content_tokens(question))
    answer_tokens = content_tokens(answer)
    new = [t for t in answer_tokens
           if t not in question_vocabulary and normalise(t.text) not in VAGUE_WORDS
           and not CJK_FUNCTION_CHARS.intersection(t.text)]
    supported = new if grounded is None else [t for t in new if t in grounded]
    invented = [t for t in new if t.kind is not Kind.WORD and t not in supported]
    new_weight = _weighted(supported, rarity)
    informativeness = new_weight / (new_weight + 1.0)
    options = alternatives(question)
    chooses = options is not None and _chooses(answer, answer_tokens, options)
    if chooses:  # "Jupiter or Saturn?" - "Jupiter is": picking one is the answer
        informativeness = 1.0
    vague = vague_count(answer)
    unmet = [kind for kind in expectations(question) if not meets(kind, new)]
    value = closeness * (0.5 + 0.5 * informativeness) * VAGUE_FACTOR ** vague \
        * UNMET_EXPECTATION_FACTOR ** len(unmet) * UNSUPPORTED_FACT_FACTOR ** len(invented)
    parts = [f"question-answer similarity {similarity:.2f}",
             f"supported new content weight {new_weight:.1f}"]
    if invented:
        parts.append("names or numbers not in the context: "
                     + ", ".join(t.text for t in invented))
    if chooses:
        parts.append("picks one of the alternatives asked about")
    if vague:
        parts.append(f"{vague} placeholder word(s)")
    if unmet:
        parts.append("no " + " or ".join(k.value for k in unmet) + " the question asks for")
    return value, "; ".join(parts)


def _chooses(answer: str, tokens: Sequence[Token], options: tuple[str, str]) -> bool:
    """Whether some clause of the answer names exactly one of the two options, or
    both with a comparison between them ("gold is heavier than silver")."""
    keys = [{t.key for t in content_tokens("x " + option)} for option in options]
    if not all(keys):
        return False
    for clause in clause_groups(answer, tokens):
        found = [[t for t in clause if t.key in k] for k in keys]
        if sum(1 for f in found if f) == 1:
            return True
        if all(found):
            first, second = sorted((found[0][0].start, found[1][0].start))
            if COMPARISON.search(answer[first:second]):
                return True
    return False


def meets(kind: Expects, new: Sequence[Token]) -> bool:
    """Whether the tokens hold the kind of fact a question asks for."""
    if kind is Expects.NUMBER:
        return any(t.kind is Kind.NUMBER for t in new)
    if kind is Expects.NAME:
        return any(t.kind is Kind.NAME or (t.kind is Kind.WORD and t.text[:1].isupper())
                   for t in new)
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
                       if not meets(kind, [t for t in sentence.tokens if t not in asked]))
                   for b, sentence in zip(bearing, evidence.sentences, strict=True)]
        best = max(bearing, default=0.0)
        needs = [max(need, min(_ramp(b, NEED_FLOOR, NEED_FULL),
                               _ramp(b, best - RELATIVE_FLOOR, best - RELATIVE_FULL)))
                 for need, b in zip(needs, bearing, strict=True)]
    return needs
