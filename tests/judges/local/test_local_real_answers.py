"""The local judge on answers as real applications give them: bare entities and
numbers read in the question's frame, refusals, answer relevance that never rewards
unsupported content, the sentence that answers kept, and bounded long inputs. Our
own examples, in English, German, French, Spanish and Chinese."""

import pytest

from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import Metric, MetricStatus

F, AR, CR = Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCE, Metric.CONTEXT_RELEVANCE

# question, context, right short answer, short answer the context does not support
# (either absent from it or the answer to something else it says)
SHORT_ANSWERS = [
    ("What year did the Varnholm ferry line start service?",
     "The Varnholm ferry line was planned in 1952 by the harbour board. It started "
     "service in 1958 with two boats. Its founder, Ingrid Solberg, ran it until 1970.",
     "1958", "1962"),
    ("Who founded the Varnholm ferry line?",
     "The Varnholm ferry line was planned in 1952 by the harbour board. It started "
     "service in 1958 with two boats. Its founder, Ingrid Solberg, ran it until 1970.",
     "Ingrid Solberg", "Lars Nyberg"),
    ("In welchem Jahr wurde die Sternwarte von Kalmbach eröffnet?",
     "Die Sternwarte von Kalmbach wurde 1911 eröffnet. Ihr größtes Fernrohr kam 1927 "
     "aus Jena. Der erste Leiter war Otto Brenner.",
     "1911", "1927"),
    ("Wer war der erste Leiter der Sternwarte von Kalmbach?",
     "Die Sternwarte von Kalmbach wurde 1911 eröffnet. Ihr größtes Fernrohr kam 1927 "
     "aus Jena. Der erste Leiter war Otto Brenner.",
     "Otto Brenner", "Karl Weiss"),
    ("¿En qué año se inauguró el puente de Arvela?",
     "El puente de Arvela se inauguró en 1934. Lo diseñó la ingeniera Lucía Fermoso. "
     "En 1988 se amplió a cuatro carriles.",
     "1934", "1988"),
    ("Qui a fondé la fromagerie de Vaudrel ?",
     "La fromagerie de Vaudrel a été fondée par Jeanne Moulin en 1897. Elle produit "
     "aujourd'hui douze fromages. Son magasin ouvre à Lyon en 1925.",
     "Jeanne Moulin", "Pierre Lacombe"),
    ("青石桥是哪一年建成的？",
     "青石桥于1923年建成，全长86米。1961年大桥进行了一次大修。",
     "1923年", "1961年"),
]


@pytest.mark.parametrize(("question", "context", "right", "wrong"), SHORT_ANSWERS)
def test_a_short_answer_is_grounded_in_the_questions_frame(
        judge: LocalJudge, passing: float, question: str, context: str, right: str,
        wrong: str) -> None:
    good = judge.evaluate_sync(question, [context], right, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], wrong, frozenset({F}))
    assert good.result(F).value is not None and bad.result(F).value is not None
    assert good.result(F).value >= passing, good
    assert good.result(F).value > bad.result(F).value, (good, bad)
    # One statement: the question's frame with the answer in it.
    assert len(good.statements) == 1 and right in good.statements[0].statement
    assert good.statements[0].supported


# question, context, right short answer, another name or number of the very sentence
# that holds it (every word is in the context, but not in the question's slot), and
# what the reason names as standing in the slot instead
SAME_SENTENCE = [
    ("Who designed the Halvik bridge?",
     "The engineer Maja Berg designed the Halvik bridge in 1929, and the mayor, Oskar "
     "Lind, opened it to traffic two years later. It has fourteen arches.",
     "Maja Berg", "Oskar Lind", "Maja Berg"),
    ("Wann wurde die Brücke von Halvik eröffnet?",
     "Die 1931 eröffnete Brücke von Halvik erhielt nach langen Verhandlungen der "
     "Gemeinde 1978 zwei weitere Fahrspuren. Sie hat vierzehn Bögen.",
     "1931", "1978", "1931"),
    ("Qui a dessiné le pont de Halvik ?",
     "L'ingénieure Claire Fontaine a dessiné le pont de Halvik, que le maire Paul Girard "
     "a inauguré en 1931. Il compte quatorze arches.",
     "Claire Fontaine", "Paul Girard", "Claire Fontaine"),
    ("¿Quién diseñó el puente de Halvik?",
     "La ingeniera Elena Marín diseñó el puente de Halvik, que el alcalde Tomás Ruiz "
     "inauguró en 1931. Tiene catorce arcos.",
     "Elena Marín", "Tomás Ruiz", "Elena Marín"),
    ("青石桥是哪一年建成的？",
     "青石桥于1923年由石匠王立山主持建成，经过多年使用后在1961年进行了一次大修。桥全长86米。",
     "1923年", "1961年", "1923"),
]


@pytest.mark.parametrize(("question", "context", "right", "wrong", "named"), SAME_SENTENCE)
def test_a_short_answer_in_another_slot_of_the_sentence_is_unsupported(
        judge: LocalJudge, passing: float, question: str, context: str, right: str,
        wrong: str, named: str
) -> None:
    good = judge.evaluate_sync(question, [context], right, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], wrong, frozenset({F}))
    assert good.result(F).value is not None and bad.result(F).value is not None
    assert good.result(F).value >= passing, good
    assert good.result(F).value > bad.result(F).value, (good, bad)
    # The reason names what stands in the question's slot instead.
    assert f'"{named}" stands nearer the question\'s terms' in bad.statements[0].reason


def test_choosing_one_alternative_the_question_names_is_supported(judge: LocalJudge) -> None:
    scores = judge.evaluate_sync("Is the Varnholm tower made of granite or limestone?",
                                 ["The Varnholm tower is made of granite from the cape."],
                                 "granite", frozenset({F}))
    assert scores.statements[0].supported, scores


# question, context, the answer, a word of the same sentence of another kind than asked
OTHER_KIND = [
    ("When did the Halvik ferry start service?",
     "The Halvik ferry started service in 1958 with boats from Kalmbach.", "1958", "boats"),
    ("Wann nahm die Fähre von Halvik den Betrieb auf?",
     "Die Fähre von Halvik nahm 1958 mit Booten aus Kalmbach den Betrieb auf.",
     "1958", "mit Booten"),
    ("¿Cuándo empezó a funcionar el ferry de Halvik?",
     "El ferry de Halvik empezó a funcionar en 1958 con barcos de Kalmbach.", "1958", "barcos"),
]


@pytest.mark.parametrize(("question", "context", "right", "wrong"), OTHER_KIND)
def test_an_answer_of_another_kind_than_asked_scores_lower(
        judge: LocalJudge, question: str, context: str, right: str, wrong: str) -> None:
    good = judge.evaluate_sync(question, [context], right, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], wrong, frozenset({F}))
    assert good.result(F).value is not None and bad.result(F).value is not None
    assert good.result(F).value > bad.result(F).value, (good, bad)
    assert "no number or date" in bad.statements[0].reason


# question, context, statement as the context has it, the same statement turned round
NEGATIONS = [
    ("Is Ferrovia Alta involved in the tunnel project?",
     "Ferrovia Alta is the main contractor of the Varnholm tunnel project. It employs 900 "
     "workers on the site.",
     "Ferrovia Alta is the main contractor of the tunnel project.",
     "Ferrovia Alta is not involved in the tunnel project."),
    ("Ist die Firma Brandl am Tunnelbau beteiligt?",
     "Die Firma Brandl ist nicht am Tunnelbau beteiligt. Sie baut nur die Zufahrtsstraße.",
     "Die Firma Brandl ist nicht am Tunnelbau beteiligt.",
     "Die Firma Brandl ist am Tunnelbau beteiligt."),
    ("¿Participa la empresa Arvesa en la obra del túnel?",
     "La empresa Arvesa no participa en la obra del túnel. Solo construye la carretera.",
     "La empresa Arvesa no participa en la obra del túnel.",
     "La empresa Arvesa participa en la obra del túnel."),
    ("L'usine de Vaudrel est-elle ouverte le dimanche ?",
     "L'usine de Vaudrel n'est jamais ouverte le dimanche. Elle ouvre du lundi au samedi.",
     "L'usine de Vaudrel n'est jamais ouverte le dimanche.",
     "L'usine de Vaudrel est ouverte le dimanche."),
]


@pytest.mark.parametrize(("question", "context", "kept", "turned"), NEGATIONS)
def test_a_statement_the_context_negates_is_unsupported(
        judge: LocalJudge, question: str, context: str, kept: str, turned: str) -> None:
    good = judge.evaluate_sync(question, [context], kept, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], turned, frozenset({F}))
    assert good.faithfulness is not None and bad.faithfulness is not None
    assert good.faithfulness > bad.faithfulness, (good, bad)


def test_a_missing_name_counts_once_however_often_the_statement_repeats_it(
        judge: LocalJudge) -> None:
    context = "Silver: 100,000 subscribers. Gold: 1,000,000 subscribers."
    answer = ("The Silver Play Button is awarded at 100k subscribers, and the Gold Play "
              "Button at 1 million subscribers.")
    scores = judge.evaluate_sync("What are the play button levels?", [context], answer,
                                 frozenset({F}))
    assert scores.statements[0].reason.endswith("not in the context: Play, Button"), scores


@pytest.mark.parametrize(("context", "statement", "abbreviation"), [
    ("Afalava was born in American Samoa, a territory of the United States since 1900.",
     "Afalava was born in American Samoa, a US territory.", "US"),
    ("The Centers for Disease Control and Prevention publishes the growth charts.",
     "The CDC publishes the growth charts.", "CDC"),
    # Defined by the statement itself, in brackets after the words it abbreviates.
    ("Artificial intelligence can be used to improve medical diagnoses.",
     "Artificial intelligence (AI) can be used to improve medical diagnoses.", "AI"),
])
def test_an_abbreviation_of_the_names_initials_is_no_missing_name(
        judge: LocalJudge, context: str, statement: str, abbreviation: str) -> None:
    scores = judge.evaluate_sync(None, [context], statement, frozenset({F}))
    assert "not in the context" not in scores.statements[0].reason, scores.statements
    # An abbreviation the context does not spell out is still missing.
    other = judge.evaluate_sync(None, [context], statement.replace(abbreviation, "UN"),
                                frozenset({F}))
    assert "not in the context: UN" in other.statements[0].reason, other.statements


@pytest.mark.parametrize(("context", "statement", "unlike"), [
    # Written with full stops in the context, spelt out or not in the statement.
    ("The mayor of Varnholm met U.S. officials on Friday.",
     "The mayor of Varnholm met US officials.", "The mayor of Varnholm met UK officials."),
    ("The mayor of Varnholm met U.S. officials on Friday.",
     "The mayor of Varnholm met United States officials.",
     "The mayor of Varnholm met United Kingdom officials."),
    ("The UNHCR opened a camp near Varnholm.",
     "The United Nations High Commissioner for Refugees opened a camp near Varnholm.",
     "The United Nations Children's Fund opened a camp near Varnholm."),
])
def test_a_name_is_its_initials_either_way(judge: LocalJudge, context: str, statement: str,
                                          unlike: str) -> None:
    scores = judge.evaluate_sync(None, [context], statement, frozenset({F}))
    assert "not in the context" not in scores.statements[0].reason, scores.statements
    other = judge.evaluate_sync(None, [context], unlike, frozenset({F}))
    assert "not in the context" in other.statements[0].reason, other.statements


def test_a_name_is_not_another_names_initials(judge: LocalJudge) -> None:
    # The context's "British Columbia" makes the initials "BC", not an abbreviation it
    # writes: "Bill Clinton" is not there.
    scores = judge.evaluate_sync(None, ["The ferry runs from British Columbia to Varnholm."],
                                 "The ferry took Bill Clinton to Varnholm.", frozenset({F}))
    assert "not in the context: Bill, Clinton" in scores.statements[0].reason, scores


def test_an_answer_opening_on_a_pronoun_is_read_with_the_question(
        judge: LocalJudge, passing: float) -> None:
    # "It" is the refund period the question asks about, as the context's sentence says.
    context = ["The Varnholm ferry pass is valid on every boat of the line. It comes with "
               "a three-month refund period. Children under six travel free."]
    question = "How long is the refund period?"
    asked = judge.evaluate_sync(question, context, "It lasts three months.", frozenset({F}))
    unasked = judge.evaluate_sync(None, context, "It lasts three months.", frozenset({F}))
    assert asked.faithfulness is not None and unasked.faithfulness is not None
    assert asked.faithfulness > unasked.faithfulness, (asked, unasked)
    assert asked.faithfulness >= passing, asked
    wrong = judge.evaluate_sync(question, context, "It lasts five months.", frozenset({F}))
    assert wrong.faithfulness is not None and wrong.faithfulness < passing, wrong


REFUSALS = ["I don't know.", "I would rather not guess.", "Ich weiß es nicht.",
            "Das weiß ich leider nicht.", "Je ne sais pas.", "Je préfère ne pas deviner.",
            "No lo sé.", "No estoy seguro.", "我不知道。", "这个我不清楚。"]


@pytest.mark.parametrize("answer", REFUSALS)
def test_refusals_are_noncommittal(judge: LocalJudge, answer: str) -> None:
    scores = judge.evaluate_sync("When did the Varnholm ferry line start service?",
                                 ["The Varnholm ferry line started service in 1958."], answer)
    assert scores.result(AR).value == 0.0
    assert scores.result(F).status is MetricStatus.NO_STATEMENTS
    assert scores.statements == ()


# question, context, grounded answer, answer of the same shape with invented facts
SAME_SHAPE = [
    ("When did the Varnholm ferry line start service?",
     "The Varnholm ferry line started service in 1958 with two boats from Varnholm.",
     "The ferry line started service in 1958 with two boats.",
     "The ferry line started service in 1964 with three hovercraft."),
    ("Wann wurde die Sternwarte von Kalmbach eröffnet?",
     "Die Sternwarte von Kalmbach wurde 1911 eröffnet und hat ein Fernrohr aus Jena.",
     "Die Sternwarte wurde 1911 eröffnet und hat ein Fernrohr aus Jena.",
     "Die Sternwarte wurde 1899 eröffnet und hat ein Teleskop aus Dresden."),
    ("¿Quién diseñó el puente de Arvela?",
     "El puente de Arvela lo diseñó la ingeniera Lucía Fermoso en 1934.",
     "Lo diseñó la ingeniera Lucía Fermoso en 1934.",
     "Lo diseñó el arquitecto Tomás Ibarrola en 1929."),
    ("青石桥有多长？",
     "青石桥于1923年建成，全长86米，由石匠王立山设计。",
     "青石桥全长86米，由石匠王立山设计。",
     "青石桥全长240米，由工程师赵明远设计。"),
]


@pytest.mark.parametrize(("question", "context", "grounded", "invented"), SAME_SHAPE)
def test_answer_relevance_is_the_same_for_invented_facts_whatever_the_passages(
        judge: LocalJudge, question: str, context: str, grounded: str, invented: str) -> None:
    # Invented facts are faithfulness's matter: relevance reads question and answer only.
    for answer in (grounded, invented):
        values = {judge.evaluate_sync(question, passages, answer, frozenset({AR})).result(AR)
                  .value for passages in ([context], [], ["The museum is closed on Mondays."])}
        assert len(values) == 1 and None not in values, (answer, values)


# question, context, the sentence that answers it
ANSWERING_SENTENCE = [
    ("When was the Varnholm lighthouse finished?",
     "The Varnholm lighthouse is a cast-iron tower on the northern cape. "
     "It was finished in 1872 after four years of work.",
     "It was finished in 1872 after four years of work."),
    ("Wann wurde der Kalmbacher Wasserturm fertiggestellt?",
     "Der Kalmbacher Wasserturm ist ein achteckiger Ziegelbau am Stadtrand. "
     "Er wurde 1904 fertiggestellt.",
     "Er wurde 1904 fertiggestellt."),
    ("Quand le phare de Vaudrel a-t-il été achevé ?",
     "Le phare de Vaudrel est une tour de granit sur la pointe nord. "
     "Il a été achevé en 1868.",
     "Il a été achevé en 1868."),
]


@pytest.mark.parametrize(("question", "context", "sentence"), ANSWERING_SENTENCE)
def test_context_relevance_keeps_the_sentence_that_answers(
        judge: LocalJudge, question: str, context: str, sentence: str) -> None:
    scores = judge.evaluate_sync(question, [context], "", frozenset({CR}))
    assert sentence in scores.kept_sentences, scores


def test_a_context_over_the_limit_is_skipped_with_the_limit_as_reason() -> None:
    judge = LocalJudge(threads=1, max_context_chars=200)
    context = "The Varnholm ferry line started service in 1958 with two boats. " * 4
    scores = judge.evaluate_sync("When did the ferry line start service?", [context],
                                 "It started service in 1958.")
    for metric in (F, CR):
        assert scores.result(metric).status is MetricStatus.SKIPPED
        assert "max_context_chars" in (scores.result(metric).reason or "")
    assert scores.result(AR).status is MetricStatus.SCORED


def test_an_answer_over_the_limit_skips_faithfulness_only() -> None:
    judge = LocalJudge(threads=1, max_answer_chars=100)
    answer = "The ferry line started service in 1958 with two boats. " * 4
    scores = judge.evaluate_sync("When did the ferry line start service?",
                                 ["The ferry line started service in 1958."], answer)
    assert scores.result(F).status is MetricStatus.SKIPPED
    assert "max_answer_chars" in (scores.result(F).reason or "")
    assert scores.result(AR).status is MetricStatus.SCORED
    assert scores.result(CR).status is MetricStatus.SCORED


def test_a_question_over_the_limit_skips_both_relevances() -> None:
    # A pasted document as the question: the answer is still checked against the
    # context, as for a record without a question.
    judge = LocalJudge(threads=1, max_question_chars=100)
    question = "When did the ferry line start service? " * 4
    scores = judge.evaluate_sync(question, ["The ferry line started service in 1958."],
                                 "The ferry line started service in 1958.")
    for metric in (AR, CR):
        assert scores.result(metric).status is MetricStatus.SKIPPED
        assert "max_question_chars" in (scores.result(metric).reason or "")
    assert scores.result(F).status is MetricStatus.SCORED
    assert (scores.result(F).value or 0.0) >= judge.thresholds["faithfulness"]


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100"])
def test_limits_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="max_context_chars"):
        LocalJudge(max_context_chars=bad)  # type: ignore[arg-type]


def test_a_metric_skipped_for_the_limit_shows_on_the_span() -> None:
    from ragas_trace.exporters.evaluation_span import explanation
    from ragas_trace.exporters.score_attributes import score_attributes
    from ragas_trace.scorer.outcome import outcome_of

    judge = LocalJudge(threads=1, max_context_chars=200)
    context = "The Varnholm ferry line started service in 1958 with two boats. " * 4
    scores = judge.evaluate_sync("When did the ferry line start service?", [context],
                                 "It started service in 1958.")
    attributes = score_attributes(outcome_of(scores, 0.1), "local", {})
    assert attributes["ragas.faithfulness.status"] == "skipped"
    assert attributes["ragas.context_relevance.status"] == "skipped"
    assert "max_context_chars" in explanation(F, scores.result(F), scores)
    # Not requested: nothing shown.
    only = judge.evaluate_sync("When?", ["It started in 1958."], "1958.", frozenset({AR}))
    assert "ragas.faithfulness.status" not in score_attributes(outcome_of(only, 0.1), "local", {})
