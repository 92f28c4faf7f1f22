"""The check stage's built-in checker: the embedder and the measurements the fitted
support models weigh, behind the same ``Checker`` interface as a brought one.

A sentence of the answer is measured against its windows' sentences (``features``:
closeness of its embedding to the nearest sentence or pair of neighbours, names and
numbers the context lacks, a structured context's yes / no fields); a bare answer in
its question's frame (``framing``: is it held by the sentence that answers the
question, in the question's slot, of the kind asked for). The statement's probability
of support is the fitted model's reading of those measurements (``support_model``);
they travel on with the ``Check`` for the fitted combination (``combine``). To change
how a statement is checked, change this module (and refit: ``tools/fit_local_judge.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragas_trace.judges.local.checker import Check, Statement, Window
from ragas_trace.judges.local.embedder import MODEL_ID, Vectors
from ragas_trace.judges.local.evidence import Context
from ragas_trace.judges.local.features import statement_evidence
from ragas_trace.judges.local.framing import framed_support
from ragas_trace.judges.local.support_model import load_models
from ragas_trace.judges.local.windows import narrowed

NOTHING_TO_CHECK = "no content word to look for"


class BuiltinChecker:
    """Reads each window's ``context`` (``evidence.Context``): the record's prepared
    sentences and their embeddings. Holds no state of its own: safe on any thread."""

    @property
    def name(self) -> str:
        return MODEL_ID

    def check(self, statements: Sequence[Statement],
              windows: Sequence[Sequence[Window]]) -> list[Check]:
        if len(statements) != len(windows):
            raise ValueError(f"{len(statements)} statements but {len(windows)} window lists")
        models = load_models()
        checks = []
        for statement, own in zip(statements, windows, strict=True):
            features, reason = measure(statement, own)
            if features is None:  # a bare "yes": nothing the context could hold
                checks.append(Check(math.nan, -1, reason))
                continue
            model = models.short if statement.short else models.statement
            checks.append(Check(model.probability(features), 0, reason, features))
        return checks


def measure(statement: Statement, windows: Sequence[Window]
            ) -> tuple[dict[str, float] | None, str]:
    """The statement's measurements against its windows (all from one record's
    context), and the reason naming what they found; None when there is nothing to
    look for."""
    if not windows:
        return None, "no passage to read it against"
    context: Context = windows[0].context
    indices = [i for w in windows for i in w.sentences]
    evidence = narrowed(context.evidence, indices)
    vectors = context.vectors(indices)
    if statement.short:
        framed = framed_support(statement.question, context.vector(statement.question),
                                statement.answer, evidence, vectors, context.rarity)
        return (None, NOTHING_TO_CHECK) if framed is None else (framed.features, framed.reason)
    found = statement_evidence(statement.text, context.vector(statement.read_as or statement.text),
                               evidence, with_adjacent_pairs(vectors))
    return found.features, found.reason()


def with_adjacent_pairs(vectors: Vectors) -> Vectors:
    """Sentence vectors plus one vector per pair of neighbours (normalised sum), since
    one answer sentence often summarises two context sentences."""
    if len(vectors) < 2:
        return vectors
    pairs = vectors[:-1] + vectors[1:]
    pairs /= np.clip(np.linalg.norm(pairs, axis=1, keepdims=True), 1e-12, None)
    return np.concatenate([vectors, pairs])
