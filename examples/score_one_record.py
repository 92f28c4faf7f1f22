"""Score one question, its retrieved passages and the answer with the offline local
judge: no API key, no network.

    pip install -e '.[local]'   # in a clone of this repository
    python examples/score_one_record.py

Expected output: faithfulness
"""

from ragas_trace import score

question = "When did the Saltmarsh Bridge open?"
contexts = [
    "The Saltmarsh Bridge opened in 1887 and carried the coast road over the estuary.",
    "Its iron spans were cast in Penrose and floated into place at high tide.",
]

for answer in ("The Saltmarsh Bridge opened in 1887.",   # grounded in the passages
               "The Saltmarsh Bridge opened in 1921."):  # a date the passages do not give
    scores = score(question, contexts, answer, judge="local")
    print(answer)
    for metric, value in (("faithfulness", scores.faithfulness),
                          ("answer relevance", scores.answer_relevance),
                          ("context relevance", scores.context_relevance)):
        shown = "none" if value is None else f"{value:.2f}"
        print(f"  {metric:18} {shown}")
    for verdict in scores.statements:
        print(f"  {'supported' if verdict.supported else 'NOT supported'}: {verdict.statement}")
