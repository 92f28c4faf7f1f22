"""Finding passages in a model's prompt: verbatim, reflowed, JSON-escaped, cut."""

from __future__ import annotations

import json

from ragas_trace.collectors import _prompt_passages as pp

LONG = ("The river market opens at six o'clock every morning, and the bridge "
        "beside it was rebuilt in 1910 after the flood.")
OTHER = "Dogs prefer open spaces; cats prefer boxes, sinks and warm laundry baskets."


def test_whole_passages_are_found_in_prompt_order() -> None:
    prompt = f"Context:\n{OTHER}\n\n{LONG}\nQuestion: when?"
    assert pp.shown(prompt, [LONG, OTHER]) == [(1, OTHER), (0, LONG)]


def test_a_passage_not_in_the_prompt_is_left_out() -> None:
    assert pp.shown(f"Context: {OTHER}", [LONG, OTHER]) == [(1, OTHER)]
    assert pp.shown("Context: nothing", [LONG, OTHER]) == []


def test_reflowed_and_json_escaped_passages_are_whole() -> None:
    reflowed = LONG.replace(" ", "\n   ")
    assert pp.shown(f"Context: {json.dumps(reflowed)}", [LONG]) == [(0, LONG)]


def test_a_cut_passage_shows_its_whole_words() -> None:
    prompt = f"Context:\n{LONG[:90]}\n{OTHER}"
    [(index, part)] = [f for f in pp.shown(prompt, [LONG, OTHER]) if f[0] == 0]
    assert index == 0
    assert LONG.startswith(part) and part == LONG[:90].rsplit(" ", 1)[0]


def test_a_short_shared_start_is_no_part() -> None:
    """Passages often start alike: fewer than MIN_PART characters say nothing."""
    prompt = f"Context: {LONG[:pp.MIN_PART - 1]} and something else entirely."
    assert pp.shown(prompt, [LONG]) == []


def test_a_passage_reaches_the_prompt_through_another_calls_completion() -> None:
    report = "Report: the market opens at six, the bridge dates from 1910."
    others = [(report, lambda: f"Summarise:\n{LONG}"), ("yes", lambda: f"Grade: {OTHER}")]
    found = pp.shown_through(f"Answer from: {report}", others, [LONG, OTHER])
    assert found == [(0, LONG)]  # "yes" is too short to link its call's prompt


def test_groups_left_out_and_whether_a_span_must_say_which() -> None:
    texts = [LONG, OTHER]
    found = [(0, LONG)]
    # A retrieval with both, another with OTHER only: the second never reached it.
    assert pp.left_out([(True, texts), (True, [OTHER])], texts, found) == ([1], True)
    # A reranker already kept LONG alone: nothing new to say.
    assert pp.left_out([(True, texts), (False, [LONG])], texts, found) == ([], False)
