"""Build the local judge's public agreement pairs from extractive QA data.

Reads ``tests/judges/local/data/public_qa_source.jsonl`` (paragraphs with their
questions and first gold answers, copied from public data sets: see the README
beside it) and writes ``public_pairs.jsonl`` in the format of ``ragas-trace eval``.
Every question gives two rows, one for each kind of wrong answer:

- ``swap``: the short answer (six words at most), of the same type (number, name,
  other) where there is one, to another question
  about the same passage: every word of it is in the passage, but it does not answer
  this question, so the statement it makes in the question's frame is unsupported;
- ``foreign``: an answer of the same type to a question about another passage of the
  same data set, that this passage does not contain;
- ``sentence``: the passage's sentence that holds the answer, with the answer replaced
  by that ``foreign`` answer: a fluent sentence in the passage's own words that asserts
  a fact the passage does not contain (the kind of hallucination an LLM writes);
- ``inline``: another name or number from the very sentence that holds the answer
  ("X won in 1931, beating Y" answered "Y"): in the passage, next to the right answer,
  but not the answer.

``poor_answer`` is the answer to another question about the same passage (grounded,
not relevant); ``context_padded`` is the passage followed by a neighbouring passage of
the same data set (the next one for ``swap`` rows, the previous one for ``foreign``).
Choices are deterministic (first candidate in file order after the question's own
position), so running the script again gives the same file. Foreign answers and
neighbours come from passages of the same source and ``pool`` (absent for the first
passages copied; a name for each later batch).

    python tools/build_public_pairs.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ragas_trace.metrics.sentences import split_sentences

SHORT_WORDS = 6
DATA = Path(__file__).resolve().parents[1] / "tests" / "judges" / "local" / "data"


def answer_type(answer: str) -> str:
    if re.search(r"\d", answer):
        return "number"
    words = answer.split()
    if words and all(w[:1].isupper() for w in words if len(w) > 3):
        return "name"
    return "other"


# A number ("1,500", "24-10") or a run of capitalised words ("Marta Ekholm"); CJK
# passages have no capitals, so only their numbers are candidates.
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NAME = re.compile(r"(?<![\w'’])[A-ZÀ-ÖØ-Þ][\w'’-]+(?:\s+(?:(?:de|von|van|du|del)\s+)?"
                   r"[A-ZÀ-ÖØ-Þ][\w'’-]+)*")


def holding_sentence(context: str, answer: str) -> str | None:
    return next((s for s in split_sentences(context) if answer in s), None)


def inline_candidates(sentence: str, answer: str, question: str, kind: str) -> list[str]:
    """Names or numbers of the answer's own type in its sentence that are neither the
    answer, nor part of it, nor named by the question."""
    pattern = _NUMBER if kind == "number" else _NAME
    found = []
    for m in pattern.finditer(sentence):
        text = m.group(0)
        start = m.start()
        if kind != "number" and (start == 0 or sentence[:start].rstrip()[-1:] in ".!?"):
            continue  # sentence-initial: a capital that need not be a name
        if text in answer or answer in text or text in question or text in found:
            continue
        found.append(text)
    return found


def rotate(items: list[Any], start: int) -> list[Any]:
    return items[start + 1:] + items[:start]


def build(paragraphs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for p_index, paragraph in enumerate(paragraphs):
        # Passages added later carry a ``pool`` of their own, so that the rows built
        # before them (their foreign answers, their neighbours) stay as they were.
        peers = [p for p in paragraphs if p["source"] == paragraph["source"]
                 and p.get("pool") == paragraph.get("pool")]
        at = peers.index(paragraph)
        following, preceding = peers[(at + 1) % len(peers)], peers[at - 1]
        qas = paragraph["qas"]
        for q_index, qa in enumerate(qas):
            kind = answer_type(qa["answer"])
            others = [o["answer"] for o in rotate(qas, q_index)
                      if o["answer"] != qa["answer"] and qa["answer"] not in o["answer"]
                      and o["answer"] not in qa["answer"]]
            if not others:
                continue
            # A long swap ("The cabin is driven by ...") copies a context sentence: a
            # faithful statement, only not an answer; swaps are short answers only.
            short = [o for o in others if len(o.split()) <= SHORT_WORDS and len(o) <= 24]
            same_type = [o for o in short if answer_type(o) == kind] or short
            # Not a longer or shorter form of this answer ("Jakob Böhme" for "Böhme"),
            # which would be right after all.
            foreign = [o["answer"] for p in rotate(peers, at) for o in p["qas"]
                       if answer_type(o["answer"]) == kind
                       and o["answer"] not in paragraph["context"]
                       and qa["answer"] not in o["answer"] and o["answer"] not in qa["answer"]]
            base = {"question": qa["question"].strip(), "context": paragraph["context"],
                    "answer": qa["answer"], "poor_answer": others[0]}
            split = f"{paragraph['source']}-{paragraph['lang']}/{paragraph['part']}"
            if same_type:
                rows.append({"id": f"p{p_index}q{q_index}-swap", "split": split, "kind": "swap",
                             **base, "ungrounded_answer": same_type[0],
                             "context_padded": paragraph["context"] + "\n"
                             + following["context"]})
            if foreign:
                rows.append({"id": f"p{p_index}q{q_index}-foreign", "split": split,
                             "kind": "foreign", **base, "ungrounded_answer": foreign[0],
                             "context_padded": paragraph["context"] + "\n"
                             + preceding["context"]})
            sentence = holding_sentence(paragraph["context"], qa["answer"])
            # An answer that is most of its sentence leaves no sentence to alter.
            if foreign and sentence and len(qa["answer"]) * 2 < len(sentence):
                rows.append({"id": f"p{p_index}q{q_index}-sentence", "split": split,
                             "kind": "sentence", **base,
                             "ungrounded_answer": sentence.replace(qa["answer"], foreign[0], 1),
                             "context_padded": paragraph["context"] + "\n"
                             + following["context"]})
            inline = inline_candidates(sentence, qa["answer"], qa["question"], kind) \
                if sentence and kind in ("number", "name") else []
            if inline:
                rows.append({"id": f"p{p_index}q{q_index}-inline", "split": split,
                             "kind": "inline", **base, "ungrounded_answer": inline[0],
                             "context_padded": paragraph["context"] + "\n"
                             + preceding["context"]})
    return rows


def main() -> None:
    source = DATA / "public_qa_source.jsonl"
    paragraphs = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()
                  if line.strip()]
    rows = build(paragraphs)
    with (DATA / "public_pairs.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows from {len(paragraphs)} passages")


if __name__ == "__main__":
    main()
