import random
import re

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever

from ragas_trace.demo.answers import best_sentences, grounded_answer, hallucinate
from ragas_trace.demo.app import build_chain
from ragas_trace.demo.behaviour import Behaviour, Mode
from ragas_trace.demo.chat_model import ScriptedChatModel, parse_prompt
from ragas_trace.demo.corpus import PASSAGES, QUESTIONS, passage
from ragas_trace.demo.retriever import TfidfRetriever

_FACTS = re.compile(r"\b\d[\d,]*\b")


def test_corpus_is_a_few_dozen_passages_each_question_has_its_passage() -> None:
    assert 25 <= len(PASSAGES) <= 60
    assert len({p.id for p in PASSAGES}) == len(PASSAGES)
    for q in QUESTIONS:
        assert passage(q.passage_id).text


def test_retriever_is_a_langchain_retriever_ranking_the_right_passage_first() -> None:
    retriever = TfidfRetriever(k=3)
    assert isinstance(retriever, BaseRetriever)
    for q in QUESTIONS:
        docs = retriever.invoke(q.text)
        assert len(docs) == 3
        assert docs[0].id == q.passage_id, q.text
        scores = [d.metadata["score"] for d in docs]
        assert scores == sorted(scores, reverse=True)


def test_retriever_rejects_bad_k() -> None:
    with pytest.raises(ValueError, match="k must"):
        TfidfRetriever(k=0)


def test_grounded_answers_are_verbatim_sentences_of_the_right_passage() -> None:
    retriever = TfidfRetriever(k=3)
    rng = random.Random(3)
    for q in QUESTIONS:
        contexts = [d.page_content for d in retriever.invoke(q.text)]
        answer = grounded_answer(q.text, contexts, rng)
        for sentence in best_sentences(q.text, contexts):
            assert sentence in passage(q.passage_id).text
        assert answer.split(". ")[0].rstrip(".") in passage(q.passage_id).text


def test_hallucination_changes_every_date_name_and_number() -> None:
    rng = random.Random(0)
    for p in PASSAGES:
        wrong = hallucinate(p.text, rng)
        assert wrong != p.text
        original_facts = _FACTS.findall(p.text)
        wrong_facts = _FACTS.findall(wrong)
        assert all(a != b for a, b in zip(original_facts, wrong_facts, strict=False)), p.id
    assert "Edda Corrin" not in hallucinate("It was founded by Edda Corrin.", rng)
    no_facts = "Traders sell mackerel and crab."
    assert hallucinate(no_facts, rng).startswith(no_facts + " ")


def test_behaviour_is_deterministic_given_a_seed() -> None:
    def modes(seed: int) -> list[Mode]:
        b = Behaviour(hallucination_rate=0.3, evasion_rate=0.1, seed=seed)
        return [b.next()[0] for _ in range(200)]

    assert modes(7) == modes(7)
    assert modes(7) != modes(8)
    shares = modes(7)
    assert 0.2 < shares.count(Mode.HALLUCINATED) / 200 < 0.4
    assert 0.03 < shares.count(Mode.EVASIVE) / 200 < 0.2


def test_drift_raises_the_hallucination_share_over_time() -> None:
    b = Behaviour(hallucination_rate=0.1, evasion_rate=0.05, drift_to=0.8, drift_requests=100)
    assert b.hallucination_share(0) == pytest.approx(0.1)
    assert b.hallucination_share(99) == pytest.approx(0.8)
    assert b.hallucination_share(500) == pytest.approx(0.8)
    modes = [b.next()[0] for _ in range(100)]
    early = modes[:30].count(Mode.HALLUCINATED)
    late = modes[70:].count(Mode.HALLUCINATED)
    assert late > early + 5


@pytest.mark.parametrize("kwargs", [
    {"hallucination_rate": 1.5}, {"evasion_rate": -0.1}, {"drift_to": 2.0},
    {"drift_requests": -1}, {"hallucination_rate": 0.8, "evasion_rate": 0.5},
])
def test_behaviour_rejects_bad_settings_naming_them(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs)).split("_")[0]):
        Behaviour(**kwargs)  # type: ignore[arg-type]


def test_chat_model_parses_its_prompt_and_reports_usage() -> None:
    model = ScriptedChatModel(behaviour=Behaviour(hallucination_rate=0.0, evasion_rate=0.0))
    assert isinstance(model, BaseChatModel)
    messages = [SystemMessage("Intro.\n\nPassages:\n[a] The bridge has 7 arches.\n[b] Other."),
                HumanMessage("How many arches does the bridge have?")]
    assert parse_prompt(messages) == ("How many arches does the bridge have?",
                                      ["The bridge has 7 arches.", "Other."])
    reply = model.invoke(messages)
    assert reply.content == "The bridge has 7 arches."
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["output_tokens"] == 5


def test_chain_answers_from_passages_and_repeats_given_a_seed() -> None:
    def run(seed: int) -> list[str]:
        chain = build_chain(Behaviour(hallucination_rate=0.4, evasion_rate=0.1, seed=seed))
        return [chain.invoke(q.text) for q in QUESTIONS[:15]]

    first = run(11)
    assert first == run(11)
    assert all(isinstance(a, str) and a for a in first)
    grounded = build_chain(Behaviour(hallucination_rate=0.0, evasion_rate=0.0))
    q = QUESTIONS[0]
    assert grounded.invoke(q.text) in passage(q.passage_id).text
