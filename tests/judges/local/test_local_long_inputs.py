"""Contexts and answers of any length are scored: past ``ALL_SENTENCES`` sentences each
statement is read against its own window, and only the windows are embedded, so the
work grows with the lengths, not with their product. Our own examples."""

from ragas_trace.judges.local import LocalJudge
from ragas_trace.judges.local.evidence import build_evidence
from ragas_trace.judges.local.judge import MAX_QUESTION_CHARS, _Record
from ragas_trace.judges.local.lexicon import MOST_PARTS
from ragas_trace.judges.local.tokens import content_tokens
from ragas_trace.judges.local.windows import (
    ALL_SENTENCES,
    MOST_POSTINGS,
    PER_QUESTION,
    PER_STATEMENT,
    SentenceIndex,
)
from ragas_trace.results import ALL_METRICS, Metric, MetricStatus

F, AR, CR = Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCE, Metric.CONTEXT_RELEVANCE

FILLER = [f"Shed {i} of the Orlund depot stores {kind} for the winter fleet."
          for i in range(1, 1200) for kind in ("rope",)]
FACT = "The Orlund depot was opened in 1871 by the harbour master Mette Halvorsen."


def long_context(at: int) -> str:
    """About 80,000 characters with one sentence about the depot's opening at ``at``."""
    sentences = [*FILLER[:at], FACT, *FILLER[at:]]
    return " ".join(sentences)


def test_a_fact_deep_in_a_long_context_supports_the_answer(judge: LocalJudge,
                                                            passing: float) -> None:
    context = long_context(1000)
    question = "Who opened the Orlund depot, and when?"
    right = judge.evaluate_sync(question, [context],
                                "The depot was opened in 1871 by Mette Halvorsen.")
    wrong = judge.evaluate_sync(question, [context],
                                "The depot was opened in 1903 by Karl Brandt.")
    assert len(context) > 75_000
    assert right.result(F).status is MetricStatus.SCORED
    assert right.result(F).value is not None and right.result(F).value >= passing
    assert wrong.result(F).value is not None and wrong.result(F).value < passing
    assert FACT in right.kept_sentences  # context relevance found it too
    assert right.context_sentences == len(FILLER) + 1


def test_only_the_windows_of_a_long_context_are_embedded(judge: LocalJudge) -> None:
    context = long_context(600)
    answer = " ".join(["The depot was opened in 1871.", "Mette Halvorsen opened it.",
                       "Shed 7 stores rope."])
    record = _Record(judge._embedder, "Who opened the Orlund depot?", [context], answer,
                     ALL_METRICS)
    sentences = [t for t in record.texts if t in set(FILLER) | {FACT}]
    assert len(FILLER) > 10 * ALL_SENTENCES
    # Each statement's window and the question's, with a neighbour each at most.
    assert 0 < len(sentences) <= 2 * (3 * PER_STATEMENT + PER_QUESTION)
    assert FACT in sentences


def test_a_long_answer_over_a_long_context_is_scored() -> None:
    judge = LocalJudge(threads=1)
    context = long_context(300)
    answer = " ".join(f"Shed {i} of the Orlund depot stores rope for the winter fleet."
                      for i in range(1, 330))  # ~20,000 characters, all supported
    scores = judge.evaluate_sync("What do the sheds of the Orlund depot store?", [context],
                                 answer + " The depot also builds ships for the navy.")
    assert len(answer) > 20_000
    for metric in (F, AR, CR):
        assert scores.result(metric).status is MetricStatus.SCORED, scores.result(metric)
    assert len(scores.statements) == 330
    unsupported = [v for v in scores.statements if not v.supported]
    assert [v.statement for v in unsupported] == ["The depot also builds ships for the navy."]


def test_a_question_of_a_thousand_parts_embeds_a_few(judge: LocalJudge) -> None:
    # Each part of a compound question is embedded and may be named in a reason: a
    # question that lists 600 (within the question limit) is read as its first few.
    question = " and ".join(f"what does shed {i} store" for i in range(600)) + "?"
    assert len(question) < MAX_QUESTION_CHARS
    record = _Record(judge._embedder, question, [long_context(5)],
                     "The sheds store rope. The depot opened in 1871.", ALL_METRICS)
    parts = [t for t in record.texts if t.startswith("what does shed") and t != question]
    assert 0 < len(parts) <= MOST_PARTS
    scores = judge.evaluate_sync(question, [long_context(5)], "Shed 2 stores rope.")
    reason = scores.result(AR).reason or ""
    assert scores.result(AR).status is MetricStatus.SCORED
    assert len(reason) < 400, reason


class _CountedKeys(frozenset[str]):
    """A sentence's keys that count how often they are looked in."""

    looks = 0

    def __contains__(self, key: object) -> bool:
        _CountedKeys.looks += 1
        return super().__contains__(key)


def test_a_word_in_every_sentence_does_not_make_each_window_read_them_all(
        judge: LocalJudge) -> None:
    # 5,000 sentences hold "depot": a statement's window is found among the sentences
    # of its rarer words, not by scoring all 5,000 for each statement.
    sentences = [f"The depot keeps crate {i}." for i in range(5000)]
    sentences[3000] = "The depot keeps a lighthouse lens."
    evidence = build_evidence([" ".join(sentences)])
    at = next(i for i, s in enumerate(evidence.sentences) if "lighthouse" in s.text)
    index = SentenceIndex(evidence)
    index._keys = [_CountedKeys(keys) for keys in index._keys]
    tokens = content_tokens("The depot keeps a lighthouse lens.")
    _CountedKeys.looks = 0
    window = index.best(tokens, judge._embedder.rarity, PER_STATEMENT)
    assert {at - 1, at} <= set(window)
    assert _CountedKeys.looks <= len(tokens) * (MOST_POSTINGS + 1)
