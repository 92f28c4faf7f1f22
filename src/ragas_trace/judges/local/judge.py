"""``LocalJudge``: the three metrics offline, on CPU, with no API key.

Faithfulness runs six stages in order, each a module with one small interface:

1. normalise (``normalise.passages``): each passage once, JSON through one adapter;
2. statements (``statements.read_answer``): the answer's ``Statement``s, each saying
   how it is read (a bare answer in its question's frame; a sentence that opens on a
   pronoun embedded with the question);
3. evidence windows (``evidence``, ``windows``): the context's sentences, and those
   each statement is read against (all of them; in a long context, the few that hold
   its terms);
4. check (``checker.Checker``): each statement against its windows, by the built-in
   checker (``builtin_checker``) or an ONNX model a user brings (``onnx_checker``);
5. combine and 6. calibrate (``combine``): the statements' checks into the answer's
   faithfulness.

The other two metrics reuse what they share and nothing else. Answer relevance reads
the question and the answer only: stage 2's parts of the answer (and its first part
in the question's frame). Context relevance reads the question and the passages only:
stages 1 and 3 (the question's own window). Both are scored in ``scoring``.

All texts of a record are embedded in one call (deduplicated, batched), started
before the context's tokens are prepared so that the two overlap when the embedder
has worker threads. Records are scored on the judge's own worker threads, so that
the scorer's event loop is never blocked; there are as many as the embedder has
model runs at once, so that while one record is scored in Python (which holds the
GIL) the model runs of another keep the cores busy.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.judges.local.builtin_checker import BuiltinChecker, measure
from ragas_trace.judges.local.checker import Check, Checker, Statement, Window
from ragas_trace.judges.local.combine import answer_evidence, copied, fitted, mean
from ragas_trace.judges.local.embedder import MODEL_ID, Embedder, ModelIntegrityError, Vectors
from ragas_trace.judges.local.evidence import Context, Evidence, build_evidence
from ragas_trace.judges.local.lexicon import question_parts
from ragas_trace.judges.local.normalise import passages
from ragas_trace.judges.local.scoring import (
    answer_relevance,
    relevance_thresholds,
    sentence_need,
)
from ragas_trace.judges.local.statements import clean_line, read_answer
from ragas_trace.judges.local.support_model import SupportModelError, load_models
from ragas_trace.judges.local.tokens import content_tokens
from ragas_trace.judges.local.windows import choose, narrowed, windows
from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.results import (
    ALL_METRICS,
    Metric,
    MetricResult,
    MetricStatus,
    Scores,
    StatementVerdict,
)

# Cost is linear in the context's and the answer's length (each statement is read
# against a bounded number of windows); these only bound the time of one record, far
# above what RAG apps pass (bench/local_judge_long_inputs.py).
MAX_CONTEXT_CHARS = 250_000
MAX_ANSWER_CHARS = 50_000
# The question's terms are read against each context sentence read: a 3.5 MB question
# took 45 s. Past this it is a pasted document, not a question to score against.
MAX_QUESTION_CHARS = 20_000
CHECKER_ENV = "RAGAS_TRACE_LOCAL_CHECKER"
# A short answer's direction, for its closeness to the question: this much of its
# vector read in the question's frame ("Who founded Acme: John Doe"), the rest the bare
# answer's. The
# frame alone is near every question it is made of (an answer to another question of
# HaluEval 0.83, as high as the right one); the bare answer near none. Chosen among
# 0.1-0.5 on the development pairs outside the holdout (HaluEval's right answers to
# their own question against another's: AUROC 0.80 bare, 0.88 at 0.3, 0.60 framed).
FRAMED_WEIGHT = 0.3
_VecFn = Callable[[str], Vectors]
# What each limit bounds, in the order of ``LocalJudge``'s, and what is skipped past it.
_LIMITED = (("context", (Metric.FAITHFULNESS, Metric.CONTEXT_RELEVANCE)),
            ("answer", (Metric.FAITHFULNESS,)),
            ("question", (Metric.ANSWER_RELEVANCE, Metric.CONTEXT_RELEVANCE)))


class LocalJudge:
    """Scores records with all-MiniLM-L6-v2 (int8 ONNX) and token grounding.

    ``threads``: model runs at once, one thread each (default: env
    ``RAGAS_TRACE_LOCAL_THREADS``, else half the cores). The model loads on first
    use, or call ``load()`` up front.

    ``checker``: the check stage's model (``checker.Checker``), or the directory of an
    ONNX checker a user brings (``onnx_checker``); default: env
    ``RAGAS_TRACE_LOCAL_CHECKER``, else the built-in, fitted one. A brought checker
    scores each statement against windows of the passages (max over windows), and
    faithfulness is the mean of its statements' probabilities, as Ragas's HHEM
    variant has it; answer and context relevance do not use it.

    Time per record is bounded by three limits: over ``max_context_chars`` of context
    (all passages together), faithfulness and context relevance are ``skipped`` with
    the limit as the reason, and answer relevance is scored without the context; over
    ``max_answer_chars`` of answer, faithfulness is ``skipped``; over
    ``max_question_chars`` of question, answer and context relevance are ``skipped``
    and faithfulness is scored as for a record without a question.
    """

    def __init__(self, *, threads: int | None = None, embedder: Embedder | None = None,
                 max_context_chars: int = MAX_CONTEXT_CHARS,
                 max_answer_chars: int = MAX_ANSWER_CHARS,
                 max_question_chars: int = MAX_QUESTION_CHARS,
                 checker: Checker | str | os.PathLike[str] | None = None) -> None:
        if embedder is not None and threads is not None:
            raise ValueError("threads: set it on the embedder you pass, not on the judge")
        for name, value in (("max_context_chars", max_context_chars),
                            ("max_answer_chars", max_answer_chars),
                            ("max_question_chars", max_question_chars)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self._limits = (max_context_chars, max_answer_chars, max_question_chars)
        self._embedder = embedder or Embedder(threads=threads)
        self._checker = _checker(checker if checker is not None
                                 else os.environ.get(CHECKER_ENV) or None)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    @property
    def name(self) -> str:
        brought = not isinstance(self._checker, BuiltinChecker)
        return f"local:{MODEL_ID}" + (f"+{self._checker.name}" if brought else "")

    @property
    def thresholds(self) -> dict[str, float]:
        """The pass thresholds calibrated for this judge on development data (an empty
        mapping when its model file cannot be read: the scorer then records the
        failure on each record)."""
        try:
            faithfulness = load_models().thresholds["faithfulness"]
            relevance = relevance_thresholds()
        except (SupportModelError, OSError, ValueError, KeyError):
            return {}
        return {"faithfulness": faithfulness, **relevance}

    def load(self) -> None:
        """Load the model now instead of on the first record."""
        self._embedder.load()

    async def aclose(self) -> None:
        """Stop the worker threads (a later ``evaluate`` starts a new one)."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)

    async def evaluate(
        self,
        question: str | None,
        contexts: Sequence[str],
        answer: str | None,
        metrics: frozenset[Metric] = ALL_METRICS,
    ) -> Scores:
        # Workers of our own: records wait for the model there, not in the event
        # loop's default executor, which other work of the scorer may need. One per
        # model run the embedder allows: more records at once would only queue for
        # the model, holding their texts in memory meanwhile.
        with self._executor_lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._embedder.threads,
                                                    thread_name_prefix="ragas-local-judge")
            executor = self._executor
        return await asyncio.get_running_loop().run_in_executor(
            executor, self.evaluate_sync, question, contexts, answer, metrics)

    def evaluate_sync(
        self,
        question: str | None,
        contexts: Sequence[str],
        answer: str | None,
        metrics: frozenset[Metric] = ALL_METRICS,
    ) -> Scores:
        """The blocking form of ``evaluate``, for callers outside an event loop."""
        started = time.perf_counter()
        try:
            if Metric.FAITHFULNESS in metrics:
                load_models()  # the fitted models; unreadable, the record fails here
            scores = _Record(self._embedder, question, contexts, answer, metrics,
                             self._limits).score(self._checker)
        except (ImportError, ModelIntegrityError, SupportModelError) as exc:
            scores = self._failed(metrics, f"local model unavailable: {exc}")
        except Exception as exc:  # our bug: count it, never invent a score
            record_internal_error("judges.local.evaluate", exc)
            scores = self._failed(metrics, f"local judge error: {type(exc).__name__}")
        return dataclasses.replace(scores, judge=self.name,
                                   duration_s=time.perf_counter() - started)

    def _failed(self, metrics: frozenset[Metric], reason: str) -> Scores:
        failed = MetricResult.unscored(MetricStatus.FAILED, reason)
        return Scores(judge=self.name, results={m: failed for m in metrics})


@dataclass(frozen=True, slots=True)
class Measured:
    """One statement and the evidence the built-in checker measured for it."""

    statement: str
    kind: str  # "statement" (a sentence of the answer) or "short" (read with the question)
    features: dict[str, float]
    reason: str


class _Record:
    """One record being scored: runs the stages, embedding every text once."""

    def __init__(self, embedder: Embedder, question: str | None, contexts: Sequence[str],
                 answer: str | None, metrics: frozenset[Metric],
                 limits: tuple[int, int, int] = (MAX_CONTEXT_CHARS, MAX_ANSWER_CHARS,
                                                 MAX_QUESTION_CHARS)) -> None:
        self.embedder = embedder
        given = passages(contexts)  # stage 1
        self.passage_words = given.words
        self.contexts, self.answer, self.question, self.skipped = _within_limits(
            given.texts, (answer or "").strip(), (question or "").strip(), limits)
        self.requested = metrics
        self.metrics = metrics - self.skipped.keys()
        # The texts build_evidence makes its sentences of, in order.
        self.sentence_texts = [t for c in self.contexts for t in split_sentences(c)]
        self.reading = read_answer(self.question, self.answer)  # stage 2
        self.statements = list(self.reading.statements) \
            if Metric.FAITHFULNESS in self.metrics else []
        self.rarity = embedder.rarity
        compound = question_parts(self.question) \
            if metrics & {Metric.CONTEXT_RELEVANCE, Metric.ANSWER_RELEVANCE} else []
        self.question_parts = compound if Metric.CONTEXT_RELEVANCE in metrics else []
        # The parts an answer of its own sentences must each answer (a short answer's
        # kind of fact is checked instead: a phrase is near no part on its own). A
        # part of question words only ("When" of "When and where ...") asks nothing.
        self.asked_parts = [p for p in compound if content_tokens(p)] if (
            Metric.ANSWER_RELEVANCE in metrics and self.answer and not self.reading.short) \
            else []
        built: list[Evidence] = []  # a long context's evidence, built to choose windows

        def evidence() -> Evidence:
            built.append(build_evidence(self.contexts))
            return built[0]

        self.windows = choose(len(self.sentence_texts), evidence,  # stage 3
                              [s.text for s in self.statements], self.question,
                              " ".join((self.question, *self.question_parts)), self.rarity)
        self.texts = self._texts_to_embed()
        # The model runs on the embedder's workers (if it has any) while this thread
        # prepares the context's tokens.
        self.pending = embedder.start(self.texts) if self.texts else None
        self.evidence = built[0] if built else build_evidence(self.contexts)

    def _prepare(self) -> Context:
        """Wait for the vectors: the record's context, ready to read."""
        vectors = self.pending.result() if self.pending else np.zeros((0, 0), np.float32)
        index = {t: i for i, t in enumerate(self.texts)}

        def vec(text: str) -> Vectors:
            row: Vectors = vectors[index[text]]
            return row

        return Context(self.evidence, vec, self.rarity)

    def _windows(self, statement: Statement, context: Context) -> list[Window]:
        """Stage 3: the windows a statement is read against."""
        return windows(self.windows.get(statement.text, [0]), context)

    def measure(self) -> tuple[list[Measured], dict[str, float]]:
        """Each statement's measured evidence, as the support models read it (empty
        when faithfulness has nothing to verify), and the answer's as a whole: what
        ``tools/fit_local_judge.py`` fits on."""
        context = self._prepare()
        measured = []
        if self.statements and self.evidence.sentences:
            for s in self.statements:
                features, reason = measure(s, self._windows(s, context))
                if features is not None:
                    measured.append(Measured(s.text, "short" if s.short else "statement",
                                             features, reason))
        return measured, self._answer_evidence([m.features for m in measured])

    def _answer_evidence(self, features: Sequence[dict[str, float]]) -> dict[str, float]:
        texts = self.reading.parts if self.reading.short else [s.text for s in self.statements]
        return answer_evidence(texts, features, self.evidence, self.answer, self.passage_words)

    def score(self, checker: Checker) -> Scores:
        context = self._prepare()
        results: dict[Metric, MetricResult] = {}
        verdicts: tuple[StatementVerdict, ...] = ()
        kept: tuple[str, ...] = ()
        if Metric.FAITHFULNESS in self.metrics:
            results[Metric.FAITHFULNESS], verdicts = self._faithfulness(checker, context)
        if Metric.ANSWER_RELEVANCE in self.metrics:
            results[Metric.ANSWER_RELEVANCE] = self._answer_relevance(context.vector)
        if Metric.CONTEXT_RELEVANCE in self.metrics:
            results[Metric.CONTEXT_RELEVANCE], kept = self._context_relevance(context)
        results |= {m: r for m, r in self.skipped.items() if m in self.requested}
        return Scores(judge="", results=results, statements=verdicts,
                      context_sentences=len(self.evidence.sentences), kept_sentences=kept)

    def _texts_to_embed(self) -> list[str]:
        wanted: list[str] = []
        if self.question and self.answer and Metric.ANSWER_RELEVANCE in self.metrics:
            wanted += [self.question, *self.reading.parts, self.reading.framed,
                       *self.asked_parts]
        if self.sentence_texts and (
                (Metric.FAITHFULNESS in self.metrics and self.statements)
                or (Metric.CONTEXT_RELEVANCE in self.metrics and self.question)):
            read = sorted({i for w in self.windows.values() for i in w})
            wanted += [self.question, *self.question_parts,
                       *(s.text for s in self.statements),
                       *(s.read_as for s in self.statements),
                       *(self.sentence_texts[i] for i in read)]
        return list(dict.fromkeys(t for t in wanted if t))

    def _faithfulness(self, checker: Checker, context: Context
                      ) -> tuple[MetricResult, tuple[StatementVerdict, ...]]:
        """Stages 4 to 6 (``combine`` says how the statements' checks combine); each
        verdict is its statement's support cut at one half."""
        if not self.answer:
            return MetricResult.unscored(MetricStatus.NO_ANSWER), ()
        if not self.evidence.sentences:
            return MetricResult.unscored(MetricStatus.NO_CONTEXT), ()
        nothing = MetricResult.unscored(
            MetricStatus.NO_STATEMENTS, "the answer declines to answer"
            if self.reading.declines else "the answer states nothing the context could support")
        if not self.statements:
            return nothing, ()
        checks = checker.check(self.statements, [self._windows(s, context)
                                                 for s in self.statements])
        if len(checks) != len(self.statements):
            raise ValueError(f"checker {checker.name} returned {len(checks)} checks for "
                             f"{len(self.statements)} statements")
        if not isinstance(checker, BuiltinChecker):
            return _brought(checker.name, self.statements, checks)
        pairs = [(s, c) for s, c in zip(self.statements, checks, strict=True) if c.features]
        if not pairs:
            return nothing, ()
        statements, checked = [s for s, _ in pairs], [c for _, c in pairs]
        whole = self._answer_evidence([dict(c.features) for c in checked])
        if copied(whole, self.reading.short):
            return MetricResult.scored(1.0), tuple(
                StatementVerdict(s.text, True, "word for word in the context")
                for s in statements)
        verdicts = tuple(StatementVerdict(s.text, c.probability >= 0.5,
                                          f"support {c.probability:.2f}: {c.evidence}")
                         for s, c in pairs)
        return MetricResult.scored(fitted(statements, checked, whole, load_models())), verdicts

    def _answer_relevance(self, vec: _VecFn) -> MetricResult:
        """From the question and the answer only: the passages never move it."""
        if not self.question:
            return MetricResult.unscored(MetricStatus.NO_QUESTION)
        if not self.answer:
            return MetricResult.unscored(MetricStatus.NO_ANSWER)
        if self.reading.declines:
            return MetricResult(0.0, MetricStatus.SCORED, "noncommittal answer")
        similarity = float(vec(self.question) @ self._answer_vector(vec))
        # Markup is no content: a list's "1." or a citation's "[2]" adds nothing.
        plain = "\n".join(clean_line(line) for line in self.answer.splitlines())
        answered = [(part, max(float(vec(part) @ vec(s)) for s in self.reading.parts))
                    for part in self.asked_parts]
        value, reason = answer_relevance(self.question, similarity, plain, self.rarity,
                                         answered)
        return MetricResult(min(1.0, max(0.0, value)), MetricStatus.SCORED, reason)

    def _answer_vector(self, vec: _VecFn) -> Vectors:
        """The answer's direction: the normalised sum of its sentences' vectors. The
        paper averages over questions generated from the answer, so each of its
        statements counts alike, however long the answer (one embedding of the
        whole would read its first 256 word pieces only)."""
        parts = [vec(part) for part in self.reading.parts]
        if self.reading.framed:
            parts[0] = FRAMED_WEIGHT * vec(self.reading.framed) + (1 - FRAMED_WEIGHT) * parts[0]
        total = np.sum(parts, axis=0)
        result: Vectors = total / max(float(np.linalg.norm(total)), 1e-12)
        return result

    def _context_relevance(self, context: Context) -> tuple[MetricResult, tuple[str, ...]]:
        if not self.question:
            return MetricResult.unscored(MetricStatus.NO_QUESTION), ()
        if not self.evidence.sentences:
            return MetricResult.unscored(MetricStatus.NO_CONTEXT), ()
        questions = [(q, context.vector(q)) for q in (self.question, *self.question_parts)]
        # In a long context only the question's window is scored: the sentences that
        # hold none of its terms count as not needed.
        window = self.windows.get(self.question, [0])
        evidence = narrowed(self.evidence, window)
        needs = sentence_need(questions, evidence, context.vectors(window), self.rarity)
        kept = tuple(s for s, n in zip(evidence.texts, needs, strict=True) if n >= 0.5)
        return MetricResult.scored(float(sum(needs)) / len(self.evidence.sentences)), kept


def _within_limits(contexts: list[str], answer: str, question: str,
                   limits: tuple[int, int, int]
                   ) -> tuple[list[str], str, str, dict[Metric, MetricResult]]:
    """The record's texts within the judge's limits, and the metrics skipped for them.

    Over a limit, the metrics that read the text are skipped, with the limit as the
    reason (stable wording, no per-record count: reasons are low-cardinality labels);
    the rest are scored without the context, the answer's first characters (the
    embedding reads the first 256 word pieces anyway), or the question."""
    over = (sum(len(c) for c in contexts) > limits[0], len(answer) > limits[1],
            len(question) > limits[2])
    skipped: dict[Metric, MetricResult] = {}
    for (what, skips), limit, too_long in zip(_LIMITED, limits, over, strict=True):
        if too_long:
            reason = (f"{what} over the local judge's limit of {limit} characters "
                      f"(max_{what}_chars)")
            skipped |= {m: MetricResult(None, MetricStatus.SKIPPED, reason) for m in skips}
    return ([] if over[0] else contexts, answer[:limits[1]], "" if over[2] else question,
            skipped)


def _brought(name: str, statements: Sequence[Statement], checks: Sequence[Check]
             ) -> tuple[MetricResult, tuple[StatementVerdict, ...]]:
    """Faithfulness from a brought checker: the mean over the statements it checked.
    One it did not (NaN: past its ``max_pairs`` or deadline) is neither supported nor
    not; the reason says so, and with none checked there is no score."""
    read = [(s, c) for s, c in zip(statements, checks, strict=True)
            if not math.isnan(c.probability)]
    # Stable wording, no counts: reasons are low-cardinality labels (the verdicts
    # list the statements checked).
    note = None if len(read) == len(statements) else \
        "not every statement checked within the checker's max_pairs and deadline_s"
    if not read:
        return MetricResult.unscored(
            MetricStatus.SKIPPED, "no statement checked within the checker's max_pairs "
            "and deadline_s"), ()
    return MetricResult(mean([c for _, c in read]), MetricStatus.SCORED, note), tuple(
        StatementVerdict(s.text, c.probability >= 0.5, f"{name} support {c.probability:.2f}"
                         + (f": {c.evidence[:160]}" if c.evidence else ""))
        for s, c in read)


def _checker(spec: Checker | str | os.PathLike[str] | None) -> Checker:
    """The checker a user brings, loaded now so that a wrong directory fails at
    construction with its reason, not on every record; else the built-in one."""
    if spec is None:
        return BuiltinChecker()
    if isinstance(spec, Checker):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        from ragas_trace.judges.local.onnx_checker import OnnxChecker

        return OnnxChecker.from_directory(Path(spec))
    raise ValueError(f"checker: expected a Checker or a model directory, got "
                     f"{type(spec).__name__}")
