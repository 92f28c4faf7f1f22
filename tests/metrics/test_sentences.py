import pytest

from ragas_trace.metrics.sentences import split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith arrived at 3.5 p.m. on Monday. The U.S. Army was there! Was it? Yes.",
         ["Dr. Smith arrived at 3.5 p.m. on Monday.", "The U.S. Army was there!", "Was it?",
          "Yes."]),
        ("Die Mauer fiel am 9. November 1989. Das war z.B. wichtig. Am 3. Oktober 1990 folgte "
         "die Einheit.",
         ["Die Mauer fiel am 9. November 1989.", "Das war z.B. wichtig.",
          "Am 3. Oktober 1990 folgte die Einheit."]),
        ("埃菲尔铁塔于1889年建成。它由古斯塔夫·埃菲尔设计！你知道吗？是的",
         ["埃菲尔铁塔于1889年建成。", "它由古斯塔夫·埃菲尔设计！", "你知道吗？", "是的"]),
        ("J. R. R. Tolkien wrote it in 1937. It sold well.\n\nLaunch\nIt flew.",
         ["J. R. R. Tolkien wrote it in 1937.", "It sold well.", "Launch", "It flew."]),
        ('It cost $3.2 million. "Great," he said.', ["It cost $3.2 million.", '"Great," he said.']),
        ("", []),
        ("   \n  ", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_a_long_passage_splits_in_one_pass() -> None:
    # Each boundary used to copy and search the text before it: a 2 MB passage took
    # hours (the scorer stalled on one huge retrieval). Now it is one pass.
    passage = "Paris is the capital of France. It has 2.1 million people. " * 20_000
    sentences = split_sentences(passage)
    assert len(sentences) == 40_000
    assert sentences[-1] == "It has 2.1 million people."
