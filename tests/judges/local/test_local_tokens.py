"""Content tokens, grounding and the word lists."""

import pytest

from ragas_trace.judges.local.evidence import build_evidence
from ragas_trace.judges.local.lexicon import (
    Expects,
    alternatives,
    expectations,
    is_noncommittal,
    question_parts,
)
from ragas_trace.judges.local.scoring import meets
from ragas_trace.judges.local.tokens import (
    Kind,
    Vocabulary,
    clause_groups,
    content_tokens,
)


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.key, t.kind.value) for t in content_tokens(text)]


def test_numbers_names_and_words() -> None:
    assert kinds("The tower was finished by Gustave Eiffel in 1889.") == [
        ("tower", "word"), ("finish", "word"), ("gustav", "name"), ("eiffel", "name"),
        ("1889", "number")]


def test_months_are_dates_but_may_and_march_the_verbs_are_not() -> None:
    assert kinds("It opened in May 1994; you may march there.") == [
        ("open", "word"), ("may", "number"), ("1994", "number"), ("march", "word")]


def test_a_word_after_an_opening_question_or_exclamation_mark_starts_a_sentence() -> None:
    # "¿Quién ...?" asks; it names nobody. A name later in the question still counts.
    assert [k for k in kinds("¿Quién fundó la ciudad de Valdoria?") if k[1] == "name"] == [
        ("valdoria", "name")]
    assert "name" not in {kind for _, kind in kinds("¡Nunca! Dijo el alcalde.")[:1]}


def test_number_forms_are_normalised() -> None:
    keys = [t.key for t in content_tokens("1,500 people; minus 2 degrees; -3; 1-0; 365.2422")]
    assert keys == ["1500", "peopl", "-2", "degre", "-3", "1-0", "365.2422"]


def test_a_context_that_spells_out_a_count_holds_it_in_digits() -> None:
    # "2-year" and "two-year" state one fact; "one" stays a word ("one of the best").
    # Only the context's words count: an answer's "seven days a week" is its own idiom.
    vocabulary = build_evidence(["A two-year warranty, twenty-five crew, trois chats, one "
                                 "of them."]).vocabulary
    assert all(t in vocabulary for t in content_tokens("a 2-year warranty for 25 crew, 3 chats"))
    assert "1" not in vocabulary.keys
    assert kinds("a seven-day week, seven days") == [("7", "number"), ("day", "word"),
                                                     ("week", "word"), ("seve", "word"),
                                                     ("days", "word")]


def test_a_counting_compound_is_its_count_in_any_text() -> None:
    # An answer's "five-year warranty" states 5, which a context's "two-year" is not;
    # its plain "seven days a week" stays words.
    two = build_evidence(["The X200 comes with a two-year warranty."]).vocabulary
    assert [t in two for t in content_tokens("a five-year warranty")] == [False, True, True]
    assert all(t in two for t in content_tokens("a two-year warranty"))


def test_an_answers_counting_word_is_held_by_the_count_in_any_form() -> None:
    # "Two years." to "How long is the warranty?": read after the question, "Two" is a
    # count, not a name, and "a two-year warranty" or "2 years" holds it; "four" not.
    assert kinds("x Two years") == [("two", "word"), ("year", "word")]
    for context in ("The X200 comes with a two-year warranty.", "It lasts 2 years."):
        vocabulary = build_evidence([context]).vocabulary
        assert all(t in vocabulary for t in content_tokens("x Two years"))
        assert content_tokens("four years")[0] not in vocabulary


def test_a_magnitude_is_part_of_its_number() -> None:
    # "100k", "100 thousand" and "100,000" are one fact, in the answer or the context.
    for text in ("100k", "100 thousand", "100,000"):
        assert kinds(f"It had {text} users.") == [("100000", "number"), ("user", "word")]
    for text in ("$2B", "$2bn", "$2 billion", "$2,000,000,000", "2 Mrd."):
        assert [t.key for t in content_tokens(text)] == ["2000000000"], text
    assert kinds("3.5 million people, a million euros, three million, 1,2 Mio.") == [
        ("3500000", "number"), ("peopl", "word"), ("1000000", "number"),
        ("euro", "word"), ("3000000", "number"), ("1200000", "number")]
    # A distance, a unit after a space, a word that only counts before a magnitude.
    assert kinds("a 100m sprint, 5 M, one of them") == [
        ("100", "number"), ("sprint", "word"), ("5", "number"), ("one", "word")]
    assert content_tokens("$100m")[0].key == "100000000"
    vocabulary = build_evidence(["The channel reached 100k subscribers."]).vocabulary
    assert content_tokens("100,000 subscribers")[0] in vocabulary
    assert content_tokens("300,000 subscribers")[0] not in vocabulary
    assert content_tokens("100 subscribers")[0] not in vocabulary


def test_a_meridiem_after_a_time_is_no_token_and_a_hyphen_may_join_a_word() -> None:
    assert kinds("Open 10:00 AM to 8:00PM; PM Modi spoke") == [
        ("open", "word"), ("10:00", "number"), ("8:00", "number"), ("pm", "word"),
        ("modi", "name"), ("spok", "word")]
    vocabulary = build_evidence(["Free WiFi and email support."]).vocabulary
    assert all(t in vocabulary for t in content_tokens("x Wi-Fi, e-mail"))
    assert content_tokens("x Hi-Fi")[0] not in vocabulary
    assert content_tokens("It ended 1-0")[1] not in build_evidence(["It ended 10 to 4."]).vocabulary


def test_chinese_text_becomes_character_bigrams() -> None:
    tokens = content_tokens("长城很长")
    assert [t.key for t in tokens] == ["长城", "城很", "很长"]
    assert {t.kind for t in tokens} == {Kind.WORD}


def test_vocabulary_matches_inflections_and_compounds() -> None:
    vocabulary = Vocabulary(content_tokens("It was patented by South African Metalllettern users."))
    for word in ("patents", "Africa", "Lettern"):
        assert content_tokens("x " + word)[0] in vocabulary
    assert content_tokens("x 1500")[0] not in Vocabulary(content_tokens("x 15000"))
    assert content_tokens("x gallbladder")[0] not in vocabulary


def test_clauses_split_at_semicolons_and_conjunctions() -> None:
    sentence = "Bell patented it in 1876; his rival was Gray, and Gray filed a caveat."
    groups = clause_groups(sentence, content_tokens(sentence))
    assert [[t.text for t in g] for g in groups] == [
        ["Bell", "patented", "1876"], ["rival", "Gray"], ["Gray", "filed", "caveat"]]


def test_a_subject_pronoun_carries_the_previous_names() -> None:
    evidence = build_evidence(["Marie Curie won in 1903. She was born in Warsaw. "
                               "Her rival, Pierre, won too."])
    curie = content_tokens("x Curie")[0]
    assert curie in evidence.sentences[1].vocabulary  # "She ..."
    assert curie not in evidence.sentences[2].vocabulary  # "Her rival ..." is Pierre


def test_noncommittal() -> None:
    assert is_noncommittal("Sorry, I do not know the answer.")
    assert is_noncommittal("Keine Ahnung.")
    assert is_noncommittal("对不起，我不知道。")
    assert not is_noncommittal("The knowledge of the Moon is old.")


def test_expected_answer_types() -> None:
    assert expectations("When did it sink, and who found it?") == {Expects.NUMBER, Expects.NAME}
    assert expectations("Wie viele Knochen hat ein Mensch?") == {Expects.NUMBER}
    assert expectations("谁发明了电话？") == {Expects.NAME}
    assert expectations("What causes tides?") == set()
    assert expectations("Where are tickets sold?") == {Expects.PLACE}


@pytest.mark.parametrize(("question", "kinds"), [
    # A relative clause's question word asks nothing; the word left in place does.
    ("The film starred a nominee, who received a star in what year?", {Expects.NUMBER}),
    ("The bridge, which was designed by Maja Berg, opened in what year?", {Expects.NUMBER}),
    ("The man who founded Acme was born where?", {Expects.PLACE}),
    ("The bridge, which Maja Berg designed, is in which city?", {Expects.NAME}),
    # The word that opens the question asks, whatever follows it.
    ("Who was the person who founded Acme?", {Expects.NAME}),
    ("In what year did the actor who starred in it get a star?", {Expects.NUMBER}),
    ("What is the population of the city where he was born?", set()),
    ("Acme was founded by whom?", {Expects.NAME}),
])
def test_the_asking_word_not_a_relative_one(question: str, kinds: set[Expects]) -> None:
    assert expectations(question) == kinds


@pytest.mark.parametrize(("answer", "holds_a_place"), [
    ("at the harbour office", True), ("in Oslo", True), ("Oslo", True),
    ("1958", False), ("tickets are cheap", False), ("an apple a day", False)])
def test_a_place_is_a_name_or_a_phrase_of_place(answer: str, holds_a_place: bool) -> None:
    tokens = [t for t in content_tokens("x " + answer) if t.start > 0]
    assert meets(Expects.PLACE, tokens, answer) is holds_a_place


def test_initials_written_with_full_stops_are_a_name() -> None:
    tokens = content_tokens("Talks in Washington, D.C., between U.S. and U.N. envoys")
    assert [(t.key, t.kind) for t in tokens if t.key in ("dc", "us", "un")] == [
        ("dc", Kind.NAME), ("us", Kind.NAME), ("un", Kind.NAME)]
    # Lower-case abbreviations are no names.
    assert content_tokens("e.g. i.e.") == []


def test_alternative_questions() -> None:
    assert alternatives("Which is larger, Jupiter or Saturn?") == ("Jupiter", "Saturn")
    assert alternatives("Ist der Rhein oder die Donau länger?") == ("Rhein", "Donau")
    assert alternatives("Is a litre of water or a litre of oil heavier?") == ("water", "litre")
    assert alternatives("What causes tides?") is None


def test_an_alternative_that_is_a_name_keeps_all_its_words() -> None:
    assert alternatives("Which closed first, Holm Quarry or Stavik Quarry?") == (
        "Holm Quarry", "Stavik Quarry")
    # The question's opening word is capitalised as the first, not as a name.
    assert alternatives("Is Nordby Hall or Vika Hall older?") == ("Nordby Hall", "Vika Hall")
    assert alternatives("Did Ingrid Solberg or Maja Berg win?") == ("Ingrid Solberg",
                                                                     "Maja Berg")


def test_compound_questions_are_split_into_parts() -> None:
    assert question_parts("When was it built, and who designed it?") == [
        "When was it built", "who designed it"]
    assert question_parts("Who won, and in which field?") == ["Who won", "in which field"]
    assert question_parts("Wann fiel die Mauer und was folgte darauf?") == [
        "Wann fiel die Mauer", "was folgte darauf"]
    assert question_parts("What do cats and dogs eat?") == []
    assert question_parts("¿Cuándo se fundó y en qué año cerró?") == [
        "Cuándo se fundó", "en qué año cerró"]
    assert question_parts("Où se trouve le musée et combien coûte l'entrée ?") == [
        "Où se trouve le musée", "combien coûte l'entrée"]
    # "que" and unaccented "cuando" also join clauses: no part starts there.
    assert question_parts("Pourquoi dit-on que la mer monte et que la terre descend ?") == []
    assert question_parts("¿Qué pasa cuando llueve y cuando nieva?") == []
    assert question_parts("¿Qué comen los gatos y los perros?") == []
