"""The statement's measurements (``features``), by direction: a statement that copies a
context sentence but puts other words in the place of the sentence's own scores below
the copy; a near synonym in that place is a paraphrase that passes. And a name or word
written without the accents its context has is the same word. Our own examples, in
English, German, French, Spanish and Chinese."""

import pytest

from ragas_trace.judges.local import LocalJudge
from ragas_trace.judges.local.tokens import content_tokens
from ragas_trace.results import Metric

F = frozenset({Metric.FAITHFULNESS})

# context, one of its sentences restated, the same with common words of another meaning
# put in the place of the sentence's own
CHANGED_WORDS = [
    ("The Harrow mill stands by the river below the village. Since 1840 it has ground "
     "wheat for the farms of the upper valley, and it still turns on market days.",
     "Since 1840 it has ground wheat for the farms of the upper valley, and it still turns "
     "on market days.",
     "Since 1840 it has ground gold for the farms of the upper valley, and it still turns "
     "on market days."),
    ("Die alte Brücke über den Mühlbach wurde im Jahr 1870 aus rotem Sandstein gebaut und "
     "1950 verbreitert. Heute fahren dort nur noch Fahrräder.",
     "Die alte Brücke über den Mühlbach wurde im Jahr 1870 aus rotem Sandstein gebaut und "
     "1950 verbreitert.",
     "Die alte Brücke über den Mühlbach wurde im Jahr 1870 aus rotem Sandstein gebaut und "
     "1950 gesperrt."),
    # Words the model knows only as pieces: a cosine of 0.41 is noise there, no synonym.
    ("Der Gemeindebrief von Talheim erscheint seit 1998 jährlich und wird kostenlos an "
     "alle Haushalte verteilt. Er hat zwölf Seiten.",
     "Der Gemeindebrief von Talheim erscheint seit 1998 jährlich und wird kostenlos an "
     "alle Haushalte verteilt.",
     "Der Gemeindebrief von Talheim erscheint seit 1998 monatlich und wird kostenlos an "
     "alle Haushalte verteilt."),
    ("La boutique de la place Carnot a ouvert en 1962. Depuis le début, elle vend surtout "
     "du pain de seigle aux habitants du quartier, et le dimanche des gâteaux.",
     "Depuis le début, elle vend surtout du pain de seigle aux habitants du quartier, et le "
     "dimanche des gâteaux.",
     "Depuis le début, elle vend surtout du vin rouge aux habitants du quartier, et le "
     "dimanche des gâteaux."),
    ("El tren de Valdehierro sale cada mañana de la estación vieja. Desde 1921 transporta "
     "sobre todo carbón para las fábricas de la costa, y en verano también viajeros.",
     "Desde 1921 transporta sobre todo carbón para las fábricas de la costa, y en verano "
     "también viajeros.",
     "Desde 1921 transporta sobre todo leche para las fábricas de la costa, y en verano "
     "también viajeros."),
    ("老街口的小店开了三十年。店主每天早上在河边卖豆腐和油条，下午就关门回家。",
     "店主每天早上在河边卖豆腐和油条，下午就关门回家。",
     "店主每天早上在河边卖包子和油条，下午就关门回家。"),
]


@pytest.mark.parametrize(("context", "restated", "changed"), CHANGED_WORDS)
def test_a_changed_word_scores_below_the_copy(
        judge: LocalJudge, passing: float, context: str, restated: str, changed: str) -> None:
    same = judge.evaluate_sync(None, [context], restated, F)
    other = judge.evaluate_sync(None, [context], changed, F)
    assert same.faithfulness is not None and other.faithfulness is not None
    # A direction: one common word in twenty barely moves the sentence's closeness or
    # the share of its words found, so how far below is the fit's call.
    assert passing <= same.faithfulness and other.faithfulness < same.faithfulness, \
        (same, other)


# context, a copy of one of its sentences with a word or phrase of like meaning in place
SYNONYMS = [
    ("The Harrow mill stands by the river below the village. It was built in 1840 by a "
     "family of millers from the upper valley.",
     "It was constructed in 1840 by a family of millers from the upper valley."),
    ("The village fair will be held from 3 to 5 August on the meadow by the church. "
     "Entry is free.",
     "The village fair will take place from 3 to 5 August on the meadow by the church."),
]


# question, context, a short answer written without the accents its context has
UNACCENTED = [
    ("Who did Arne Holt marry in 1902?",
     "In 1902 the painter Arne Holt married José Núñez's daughter in Bergen. They moved "
     "to Oslo a year later.",
     "Jose Nunez's daughter"),
    ("Qui a fondé l'atelier de reliure ?",
     "L'atelier de reliure a été fondé par Hélène Dupré en 1931. Il emploie six "
     "personnes.",
     "Helene Dupre"),
    ("¿Quién dirigió la orquesta en 1950?",
     "En 1950 la orquesta fue dirigida por Ramón Peña. Antes había tocado el violín en "
     "Sevilla.",
     "Ramon Pena"),
]


@pytest.mark.parametrize(("question", "context", "answer"), UNACCENTED)
def test_a_name_without_its_accents_is_the_contexts_name(
        judge: LocalJudge, passing: float, question: str, context: str,
        answer: str) -> None:
    result = judge.evaluate_sync(question, [context], answer, F)
    assert result.faithfulness is not None and result.faithfulness > passing, result
    assert "not in the context" not in result.statements[0].reason, result


def test_accent_folding_keeps_function_words_out() -> None:
    assert [t.key for t in content_tokens("Héléne fiancée")] == \
        [t.key for t in content_tokens("Helene fiancee")]
    # "für" and "über" are German function words; folded they must not become content.
    assert [t.text for t in content_tokens("Ein Preis für Kunst über Jahre")] == \
        ["Preis", "Kunst", "Jahre"]


# context whose second sentence refers back with a pronoun, that sentence with the
# pronoun replaced by what it stands for
NAMED_PRONOUN = [
    ("老城墙是明代修建的防御工事。它主要是为了防止洪水进入城内而加高的。",
     "老城墙主要是为了防止洪水进入城内而加高的。"),
    ("La boutique de la place Carnot a ouvert en 1962. Depuis le début, elle vend surtout "
     "du pain de seigle aux habitants du quartier.",
     "Depuis le début, le magasin vend surtout du pain de seigle aux habitants du "
     "quartier."),
]


@pytest.mark.parametrize(("context", "answer"), [
    *(pytest.param(*case, id=f"synonym-{i}") for i, case in enumerate(SYNONYMS)),
    *(pytest.param(*case, id=f"pronoun-{i}") for i, case in enumerate(NAMED_PRONOUN))])
def test_a_context_sentence_restated_stays_supported(
        judge: LocalJudge, passing: float, context: str, answer: str) -> None:
    # A synonym in place of a word, or the name a pronoun stands for.
    result = judge.evaluate_sync(None, [context], answer, F)
    assert result.faithfulness is not None and result.faithfulness >= passing, result
