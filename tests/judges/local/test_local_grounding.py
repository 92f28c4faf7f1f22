"""Faithfulness combines the embedding with the grounding of the answer's content
tokens: a statement whose every name, number and word the context holds ranks above
one that brings in something the context lacks, however fluent, and an invented word
counts however long the sentence around it. Our own examples, in English, German,
French and Spanish."""

import pytest

from ragas_trace.judges.local import LocalJudge
from ragas_trace.results import Metric

F = Metric.FAITHFULNESS

# question, context, right short answer, fluent answer that puts a fact the context
# does not hold into the context's own sentence
FLUENT_HALLUCINATIONS = [
    ("Who designed the Orrin lighthouse?",
     "The Orrin lighthouse stands on a granite spur north of the harbour. It was "
     "designed by the engineer Maud Keswick and first lit in 1879. A keeper lived there "
     "until 1961.",
     "Maud Keswick",
     "It was designed by the engineer Thomas Hale and first lit in 1879."),
    ("Wann wurde die Brücke über die Wessel fertiggestellt?",
     "Die Brücke über die Wessel verbindet die Altstadt mit dem Bahnhof. Sie wurde 1908 "
     "fertiggestellt und 1952 verbreitert. Ihr Architekt war Paul Grebe.",
     "1908",
     "Sie wurde 1913 fertiggestellt und 1952 verbreitert."),
    ("Quelle rivière traverse le village de Sorbiers ?",
     "Le village de Sorbiers est traversé par la Vèze, un petit affluent de la Loire. "
     "Son moulin date du XVIIe siècle. On y compte environ 800 habitants.",
     "la Vèze",
     "Le village de Sorbiers est traversé par la Dordogne, un petit affluent de la Loire."),
    ("¿Cuántos habitantes tiene el pueblo de Almarza?",
     "El pueblo de Almarza tiene unos 1200 habitantes. Su iglesia es del siglo XIII. "
     "Cada agosto celebra una feria de ganado.",
     "1200",
     "El pueblo de Almarza tiene unos 3500 habitantes."),
]


@pytest.mark.parametrize(("question", "context", "right", "wrong"), FLUENT_HALLUCINATIONS)
def test_a_bare_right_answer_outranks_a_fluent_sentence_with_a_fact_not_in_the_context(
        judge: LocalJudge, passing: float, question: str, context: str, right: str,
        wrong: str) -> None:
    good = judge.evaluate_sync(question, [context], right, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], wrong, frozenset({F}))
    assert good.faithfulness is not None and bad.faithfulness is not None
    assert bad.faithfulness < good.faithfulness and good.faithfulness >= passing, (good, bad)


# context, its long first sentence repeated, the same with one ordinary word changed
# for one the context does not have (in German a noun: capitalised, so a name)
SUBSTITUTED_WORDS = [
    ("The Orrin lighthouse, which stands on a narrow granite spur two miles north of the "
     "old fishing harbour, was lit for the first time on a stormy night in the autumn of "
     "1879. A keeper lived there until 1961.",
     "The Orrin lighthouse, which stands on a narrow granite spur two miles north of the "
     "old fishing harbour, was lit for the first time on a stormy night in the autumn of "
     "1879.",
     "The Orrin lighthouse, which stands on a narrow limestone spur two miles north of the "
     "old fishing harbour, was lit for the first time on a stormy night in the autumn of "
     "1879."),
    ("Der Hof der Familie Abel, der seit vier Generationen am sonnigen Südhang des "
     "Kesselbergs oberhalb des kleinen Dorfes liegt, baut vor allem alte Sorten von Äpfeln "
     "und Birnen an. Im Winter ruht die Arbeit.",
     "Der Hof der Familie Abel, der seit vier Generationen am sonnigen Südhang des "
     "Kesselbergs oberhalb des kleinen Dorfes liegt, baut vor allem alte Sorten von Äpfeln "
     "und Birnen an.",
     "Der Hof der Familie Abel, der seit vier Generationen am sonnigen Südhang des "
     "Kesselbergs oberhalb des kleinen Dorfes liegt, baut vor allem alte Sorten von Äpfeln "
     "und Pflaumen an."),
    ("La fromagerie de Vaudrel, installée depuis plus d'un siècle au bord de la rivière, "
     "affine ses tommes pendant trois mois dans une ancienne cave voûtée creusée sous "
     "l'église. Le lait vient de trois fermes voisines.",
     "La fromagerie de Vaudrel, installée depuis plus d'un siècle au bord de la rivière, "
     "affine ses tommes pendant trois mois dans une ancienne cave voûtée creusée sous "
     "l'église.",
     "La fromagerie de Vaudrel, installée depuis plus d'un siècle au bord de la rivière, "
     "affine ses tommes pendant trois mois dans une ancienne cave voûtée creusée sous la "
     "mairie."),
    ("El molino de Arvela, levantado junto al río Tera por una familia de canteros del "
     "valle, muele trigo y centeno para los pueblos de la comarca desde el año 1860. Hoy "
     "es un museo.",
     "El molino de Arvela, levantado junto al río Tera por una familia de canteros del "
     "valle, muele trigo y centeno para los pueblos de la comarca desde el año 1860.",
     "El molino de Arvela, levantado junto al río Tera por una familia de canteros del "
     "valle, muele trigo y cebada para los pueblos de la comarca desde el año 1860."),
]


@pytest.mark.parametrize(("context", "restated", "substituted"), SUBSTITUTED_WORDS)
def test_a_word_the_context_lacks_lowers_support_in_a_long_sentence(
        judge: LocalJudge, context: str, restated: str, substituted: str) -> None:
    same = judge.evaluate_sync(None, [context], restated, frozenset({F}))
    changed = judge.evaluate_sync(None, [context], substituted, frozenset({F}))
    assert same.faithfulness is not None and changed.faithfulness is not None
    # How much it costs is the fitted model's (little, on real data); a reason names
    # the word only where a measurement the model weighs found it (a changed word,
    # a missing name).
    assert changed.faithfulness < same.faithfulness
    lacks = ("where the context says", "not in the context:")
    assert not any(p in same.statements[0].reason for p in lacks), same.statements


# question, context, a right answer held by a sentence that matches the question only
# loosely (paraphrased question), a fluent answer with a name the context lacks
LOOSE_FRAMES = [
    ("Who saw strange things as a child?",
     "According to his first biographer, Henrik Aalto had visions from an early age. "
     "He later worked as a clockmaker in Turku.",
     "Henrik Aalto",
     "According to his first biographer, Mikko Rantala had visions from an early age."),
    ("Wer hatte schon als Kind Visionen?",
     "Nach seinem ersten Biografen hatte Jonas Ebert schon früh Erscheinungen. Später "
     "arbeitete er als Uhrmacher in Ulm.",
     "Jonas Ebert",
     "Nach seinem ersten Biografen hatte Martin Kugler schon früh Erscheinungen."),
    ("¿Quién tuvo visiones de niño?",
     "Según su primer biógrafo, Tomás Lezama tuvo apariciones desde muy joven. Más tarde "
     "trabajó como relojero en Burgos.",
     "Tomás Lezama",
     "Según su primer biógrafo, Andrés Olmedo tuvo apariciones desde muy joven."),
]


@pytest.mark.parametrize(("question", "context", "right", "wrong"), LOOSE_FRAMES)
def test_a_grounded_short_answer_keeps_a_floor_when_its_sentence_matches_loosely(
        judge: LocalJudge, passing: float, question: str, context: str, right: str,
        wrong: str) -> None:
    good = judge.evaluate_sync(question, [context], right, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], wrong, frozenset({F}))
    assert good.faithfulness is not None and bad.faithfulness is not None
    assert good.faithfulness >= passing > bad.faithfulness, (good, bad)


# question, context, right short answer opening with a function word or article,
# another name from the same context
LEADING_FUNCTION_WORDS = [
    ("Who struck the first coins of the colony?",
     "The first coins of the colony were struck by the Royal Mint in 1853. They were "
     "shipped to Port Arden on the steamer Hesper.",
     "The Royal Mint", "Port Arden"),
    ("Wo wurde der Motor entwickelt?",
     "Der Motor wurde an der Hochschule Kiel entwickelt. Gebaut wird er seit 2019 in "
     "einem Werk bei Flensburg.",
     "An der Hochschule Kiel", "Flensburg"),
    ("Où la pianiste a-t-elle étudié ?",
     "La pianiste a étudié au Conservatoire de Lyon. Elle a ensuite enseigné pendant "
     "vingt ans à Grenoble.",
     "au Conservatoire de Lyon", "Grenoble"),
    ("¿Dónde se formó el arquitecto?",
     "El arquitecto se formó en la Escuela de Valladolid. Más tarde construyó varios "
     "mercados en Zamora.",
     "la Escuela de Valladolid", "Zamora"),
]


@pytest.mark.parametrize(("question", "context", "right", "wrong"), LEADING_FUNCTION_WORDS)
def test_a_function_word_opening_a_short_answer_is_not_a_missing_name(
        judge: LocalJudge, question: str, context: str, right: str, wrong: str) -> None:
    good = judge.evaluate_sync(question, [context], right, frozenset({F}))
    bad = judge.evaluate_sync(question, [context], wrong, frozenset({F}))
    assert good.faithfulness is not None and bad.faithfulness is not None
    # The statements' own reasons: the metric's ``reasons`` entry is None once scored.
    assert good.statements, good
    assert all("not in the context" not in s.reason for s in good.statements), good
    assert good.faithfulness > bad.faithfulness, (good, bad)


WARRANTY = ("The X200 vacuum comes with a two-year warranty. A full recharge takes about "
            "three hours. The X200 runs at 65 decibels.")


@pytest.mark.parametrize(("question", "same_count", "another_count"), [
    ("How long is the warranty?", "The X200 comes with a 2-year warranty.",
     "The X200 comes with a 4-year warranty."),
    ("How long is the warranty?", "The X200 comes with a two-year warranty.",
     "The X200 comes with a five-year warranty."),
    ("How long does charging take?", "A full recharge takes about 3 hours.",
     "A full recharge takes about 6 hours."),
    # The answer's own counting word is the count it states, as "6" is.
    ("How long does charging take?", "It takes about three hours.",
     "It takes about six hours."),
])
def test_a_count_written_another_way_than_the_contexts_is_the_same_number(
        judge: LocalJudge, passing: float, question: str, same_count: str,
        another_count: str) -> None:
    same = judge.evaluate_sync(question, [WARRANTY], same_count, frozenset({F}))
    other = judge.evaluate_sync(question, [WARRANTY], another_count, frozenset({F}))
    assert same.faithfulness is not None and other.faithfulness is not None
    assert same.faithfulness >= passing > other.faithfulness, (same, other)


@pytest.mark.parametrize(("question", "same_count", "another_count"), [
    ("How long is the warranty?", "Two years.", "Four years."),
    ("How long is the warranty?", "2 years", "5 years"),
    ("How long does charging take?", "3 hours.", "6 hours."),
])
def test_a_short_answer_with_the_contexts_count_scores_above_another_count(
        judge: LocalJudge, passing: float, question: str, same_count: str,
        another_count: str) -> None:
    # A direction, not a pass mark: whether "2 years" passes beside "a two-year
    # warranty" is the fit's call (it reads the answer's words, not its count).
    same = judge.evaluate_sync(question, [WARRANTY], same_count, frozenset({F}))
    other = judge.evaluate_sync(question, [WARRANTY], another_count, frozenset({F}))
    assert same.faithfulness is not None and other.faithfulness is not None
    assert same.faithfulness > other.faithfulness and other.faithfulness < passing, (
        same, other)


@pytest.mark.parametrize(("question", "relevant"), [
    ("How long is the warranty?", True),
    ("Who makes the X200?", False),
])
def test_a_sentence_that_restates_the_question_with_its_answer_is_relevant(
        judge: LocalJudge, question: str, relevant: bool) -> None:
    # The answer's "warranty" is the question's too: read with all the question's
    # terms, the context sentence holding the answer is the one that answers "how
    # long"; it says nothing of who makes it.
    scores = judge.evaluate_sync(question, [WARRANTY], "The X200 comes with a two-year "
                                 "warranty.", frozenset({Metric.ANSWER_RELEVANCE}))
    value = scores.result(Metric.ANSWER_RELEVANCE).value
    assert value is not None
    assert (value >= judge.thresholds["answer_relevance"]) is relevant, scores
