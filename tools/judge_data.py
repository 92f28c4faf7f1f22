"""Labelled answers for fitting and measuring the local judge, read from
``../shared/data`` (or ``$RAGAS_TRACE_SHARED_DATA``) and from the public pairs in
``tests/judges/local/data``. Nothing is copied into the repository.

Every answer carries its ``group`` (the source passage: all answers to one passage
fall in one cross-validation fold) and its ``pair`` (answers compared with each
other: those to the same question over the same passages).

- ``ragtruth-summary``, ``ragtruth-data2txt``: RAGTruth's summarisation and
  data-to-text test sets (real answers of six LLMs, human labels with the
  hallucinated spans);
- ``halueval``: HaluEval QA (right answer and two generated hallucinations);
- ``attributionbench``: AttributionBench's development split (claims of real answers
  of LLMs and generative search engines to real questions, with their references and
  a human attribution label); the group is the question;
- ``public-dev``, ``public-held_out``: our extractive-QA pairs (SQuAD 2.0,
  GermanQuAD, PIAF, SQuAD-es, CMRC 2018), a right answer and a wrong one from the
  same passage; ``held_out`` is never fitted on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLIC_PAIRS = REPO / "tests" / "judges" / "local" / "data" / "public_pairs.jsonl"
DEV_CASES = (REPO / "tests" / "judges" / "local" / "dev_cases.jsonl",
             REPO / "tests" / "judges" / "local" / "extra_cases.jsonl")
_WORD = re.compile(r"[\u3400-\u9fff]|[^\W_]+")


@dataclass(frozen=True)
class Answer:
    dataset: str
    id: str
    group: str  # the source passage: one cross-validation fold holds all its answers
    pair: str  # answers compared pairwise: the same question over the same passages
    question: str
    contexts: tuple[str, ...]
    answer: str
    hallucinated: bool
    spans: tuple[str, ...] = ()  # the labelled hallucinated spans, where known


# The holdout: a third of each development set's sources (``group``: a RAGTruth source
# passage of each task, an AttributionBench question, a HaluEval question, a public dev
# passage), chosen by this seed and nothing else, fixed before any of the selection it
# checks. The fit (features, weights, thresholds, the lean toward word overlap) never
# reads it; bench/local_judge_report.py scores it beside the cross-validated figures.
HOLDOUT_SEED = "ragas-trace holdout, issue 53"
HOLDOUT_SHARE = 3  # one source in this many


def held_back(dataset: str, group: str) -> bool:
    """Whether the answers of a development set's source belong to the holdout (all
    answers of one source do, so it measures new sources, as the folds do)."""
    key = f"{HOLDOUT_SEED}:{dataset}:{group}".encode()
    return int(hashlib.sha256(key).hexdigest(), 16) % HOLDOUT_SHARE == 0


def shared_data() -> Path | None:
    """The shared data folder, or None when this checkout has none beside it."""
    path = Path(os.environ.get("RAGAS_TRACE_SHARED_DATA", REPO.parent / "shared" / "data"))
    return path if (path / "halueval-qa.jsonl").exists() else None


def _jsonl(path: Path) -> Iterator[dict[str, object]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def ragtruth(task: str, data: Path) -> list[Answer]:
    out = []
    for row in _jsonl(data / "ragtruth-dev" / f"{task}.jsonl"):
        source = f"{task}-{row['source_id']}"
        for i, response in enumerate(row["responses"]):  # type: ignore[arg-type]
            out.append(Answer(f"ragtruth-{task}", f"{source}-{i}", source, source,
                              str(row["question"]), (str(row["context"]),),
                              str(response["response"]), bool(response["hallucinated"]),
                              tuple(str(label["text"]) for label in response["labels"])))
    return out


def halueval(data: Path) -> list[Answer]:
    out = []
    for row in _jsonl(data / "halueval-qa.jsonl"):
        rid, q, c = str(row["id"]), str(row["question"]), (str(row["context"]),)
        out.append(Answer("halueval", f"{rid}-right", rid, rid, q, c, str(row["answer"]), False))
        for i, wrong in enumerate(dict.fromkeys(row["hallucinated"])):  # type: ignore[arg-type]
            out.append(Answer("halueval", f"{rid}-h{i}", rid, rid, q, c, str(wrong), True))
    return out


def attributionbench(data: Path) -> list[Answer]:
    """Each claim is an answer of its own, read against its references; "not
    attributable" is hallucinated. Claims to one question share a fold and a pair."""
    out = []
    for i, row in enumerate(_jsonl(data / "attributionbench-dev.jsonl")):
        group = f"ab-{row['question']}"
        out.append(Answer("attributionbench", f"ab-{i}", group, group, str(row["question"]),
                          tuple(str(r) for r in row["references"]),  # type: ignore[attr-defined]
                          str(row["claim"]), row["attribution_label"] != "attributable"))
    return out


def attributionbench_responses(data: Path) -> list[tuple[str, tuple[str, ...], str]]:
    """Each question's whole response, with its references: (question, references,
    response), one per question."""
    rows = {str(row["question"]): row for row in _jsonl(data / "attributionbench-dev.jsonl")}
    return [(q, tuple(str(r) for r in row["references"]),  # type: ignore[attr-defined]
             str(row["response"])) for q, row in rows.items()]


def public_group(source: str, rid: str) -> str:
    """A public pair's source passage (``p12`` of ``p12q0-swap``) in its language's set."""
    return f"{source}-{rid.split('q')[0]}"


def public_pairs(part: str) -> list[Answer]:
    """``part``: "dev" or "held_out". The group is the passage (``p12`` of ``p12q0-swap``)
    in its language's set."""
    out = []
    for row in _jsonl(PUBLIC_PAIRS):
        source, split = str(row["split"]).split("/")
        if split != part:
            continue
        rid = str(row["id"])
        group = public_group(source, rid)
        pair = f"{source}-{rid}"
        q, c = str(row["question"]), (str(row["context"]),)
        out.append(Answer(f"public-{part}", f"{pair}-right", group, pair, q, c,
                          str(row["answer"]), False))
        out.append(Answer(f"public-{part}", f"{pair}-wrong", group, pair, q, c,
                          str(row["ungrounded_answer"]), True))
    return out


def dev_cases() -> list[Answer]:
    """The development-style cases (hand-written here): never fitted on."""
    out = []
    for path in DEV_CASES:
        for row in _jsonl(path):
            rid = f"{path.stem}-{row['id']}"
            q, c = str(row["question"]), (str(row["context"]),)
            out.append(Answer(f"cases-{row.get('split') or 'ordinary'}", f"{rid}-right", rid,
                              rid, q, c, str(row["answer"]), False))
            out.append(Answer(f"cases-{row.get('split') or 'ordinary'}", f"{rid}-wrong", rid,
                              rid, q, c, str(row["ungrounded_answer"]), True))
    return out


def development(data: Path) -> list[Answer]:
    """Everything the judge is fitted on (cross-validated by ``group``)."""
    return [*ragtruth("summary", data), *ragtruth("data2txt", data), *halueval(data),
            *attributionbench(data), *public_pairs("dev")]


def held_out() -> list[Answer]:
    """Answers never fitted on: measured with the shipped model."""
    return [*public_pairs("held_out"), *dev_cases()]


def words(text: str) -> list[str]:
    return [m.group(0).casefold() for m in _WORD.finditer(text)]


def overlaps(span: str, statement: str) -> bool:
    """Whether a labelled hallucinated span falls (at least half of it) in a statement."""
    span_words = words(span)
    if not span_words:
        return False
    joined_statement = " ".join(words(statement))
    if " ".join(span_words) in joined_statement:
        return True
    own = set(words(statement))
    # A span that runs across sentences: its longest run of words inside this one.
    best = run = 0
    for w in span_words:
        run = run + 1 if w in own else 0
        best = max(best, run)
    return best >= max(3, len(span_words) // 2) or best == len(span_words)
