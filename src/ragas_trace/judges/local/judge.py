"""``LocalJudge``: the three metrics offline, on CPU, with no API key.

All texts of a record are embedded in one call (deduplicated, batched), started
before the context's tokens are prepared so that the two overlap when the embedder
has worker threads. Records are scored on the judge's own worker threads, so that
the scorer's event loop is never blocked; there are as many as the embedder has
model runs at once, so that while one record is scored in Python (which holds the
GIL) the model runs of another keep the cores busy.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.judges.local.checker import Checker, Statement, Window
from ragas_trace.judges.local.conventions import answer_parts, clean_line
from ragas_trace.judges.local.embedder import MODEL_ID, Embedder, ModelIntegrityError, Vectors
from ragas_trace.judges.local.evidence import (
    Evidence,
    build_evidence,
    opens_with_pronoun,
    plain_words,
    refers_back,
)
from ragas_trace.judges.local.features import (
    StatementEvidence,
    answer_evidence,
    copied,
    statement_evidence,
    with_supports,
)
from ragas_trace.judges.local.framing import (
    FramedSupport,
    framed_statement,
    framed_support,
    is_short,
)
from ragas_trace.judges.local.lexicon import is_noncommittal, question_parts
from ragas_trace.judges.local.scoring import (
    answer_relevance,
    relevance_thresholds,
    sentence_need,
)
from ragas_trace.judges.local.structured import flatten_passage
from ragas_trace.judges.local.support_model import SupportModelError, SupportModels, load_models
from ragas_trace.judges.local.tokens import content_tokens
from ragas_trace.judges.local.windows import (
    ALL_SENTENCES,
    PER_QUESTION,
    PER_STATEMENT,
    SentenceIndex,
    narrowed,
)
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
# A window of the passages a brought checker reads a statement against: consecutive
# sentences up to about this many words (MiniCheck's chunks are ~400 tokens).
WINDOW_WORDS = 300
# A short answer's direction, for its closeness to the question: this much of its
# vector read in the question's frame ("Who founded Acme: John Doe"), the rest the bare
# answer's. The
# frame alone is near every question it is made of (an answer to another question of
# HaluEval 0.83, as high as the right one); the bare answer near none. Chosen among
# 0.1-0.5 on the development pairs outside the holdout (HaluEval's right answers to
# their own question against another's: AUROC 0.80 bare, 0.88 at 0.3, 0.60 framed).
FRAMED_WEIGHT = 0.3


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
        self._checker = _brought_checker(checker if checker is not None
                                         else os.environ.get(CHECKER_ENV) or None)
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    @property
    def name(self) -> str:
        return f"local:{MODEL_ID}" + (f"+{self._checker.name}" if self._checker else "")

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
            # The fitted models serve faithfulness only.
            models = load_models() if Metric.FAITHFULNESS in metrics else None
            scores = _Record(self._embedder, question, contexts, answer, metrics,
                             self._limits).score(models, self._checker)
        except (ImportError, ModelIntegrityError, SupportModelError) as exc:
            scores = self._failed(metrics, f"local model unavailable: {exc}")
        except Exception as exc:  # our bug: count it, never invent a score
            record_internal_error("judges.local.evaluate", exc)
            scores = self._failed(metrics, f"local judge error: {type(exc).__name__}")
        return Scores(
            judge=self.name,
            results=scores.results,
            statements=scores.statements,
            context_sentences=scores.context_sentences,
            kept_sentences=scores.kept_sentences,
            duration_s=time.perf_counter() - started,
        )

    def _failed(self, metrics: frozenset[Metric], reason: str) -> Scores:
        failed = MetricResult.unscored(MetricStatus.FAILED, reason)
        return Scores(judge=self.name, results={m: failed for m in metrics})

_VecFn = Callable[[str], Vectors]


@dataclass(frozen=True, slots=True)
class Measured:
    """One statement and the evidence measured for it."""

    statement: str
    kind: str  # "statement" (a sentence of the answer) or "short" (read with the question)
    features: dict[str, float]
    reason: str


class _Record:
    """One record being scored: gathers every text to embed, embeds once, scores."""

    def __init__(self, embedder: Embedder, question: str | None, contexts: Sequence[str],
                 answer: str | None, metrics: frozenset[Metric],
                 limits: tuple[int, int, int] = (MAX_CONTEXT_CHARS, MAX_ANSWER_CHARS,
                                                 MAX_QUESTION_CHARS)) -> None:
        self.embedder = embedder
        self.question = (question or "").strip()
        self.answer = (answer or "").strip()
        passages = [contexts] if isinstance(contexts, str) else contexts  # one passage
        # A passage retrieved twice says nothing twice: each is read once.
        self.contexts = list(dict.fromkeys(flatten_passage(c) for c in passages
                                           if isinstance(c, str) and c.strip()))
        # The passages' words as written (a structured one unflattened).
        self.passage_words = frozenset(plain_words("\n".join(
            c for c in passages if isinstance(c, str))))
        self.skipped: dict[Metric, MetricResult] = {}
        context_chars = sum(len(c) for c in self.contexts)
        if context_chars > limits[0]:
            # Stable wording (no per-record count): reasons are low-cardinality labels.
            reason = (f"context over the local judge's limit of {limits[0]} characters "
                      "(max_context_chars)")
            self.skipped |= {m: MetricResult(None, MetricStatus.SKIPPED, reason)
                             for m in (Metric.FAITHFULNESS, Metric.CONTEXT_RELEVANCE)}
            self.contexts = []
        if len(self.answer) > limits[1]:
            reason = (f"answer over the local judge's limit of {limits[1]} characters "
                      "(max_answer_chars)")
            self.skipped[Metric.FAITHFULNESS] = MetricResult(None, MetricStatus.SKIPPED, reason)
            # The embedding reads the first 256 word pieces only; so does the rest of
            # answer relevance, which keeps its time bounded.
            self.answer = self.answer[:limits[1]]
        if len(self.question) > limits[2]:
            reason = (f"question over the local judge's limit of {limits[2]} characters "
                      "(max_question_chars)")
            self.skipped |= {m: MetricResult(None, MetricStatus.SKIPPED, reason)
                             for m in (Metric.ANSWER_RELEVANCE, Metric.CONTEXT_RELEVANCE)}
            self.question = ""
        self.requested = metrics
        self.metrics = metrics - self.skipped.keys()
        # The texts build_evidence makes its sentences of, in order.
        self.sentence_texts = [t for c in self.contexts for t in split_sentences(c)]
        # What the answer asserts, without the wrapping of real LLM answers (markdown,
        # citations, preambles, sentences about the passages, hedges).
        parts = answer_parts(self.answer) if self.answer else None
        claims = parts.statements if parts else []
        # An evasion: nothing asserted, or every sentence evades (a hedged but
        # committal "I'm not sure of the day, but it opened in 1889" asserts).
        self.refusal = bool(self.answer) and not claims and (
            (parts is not None and parts.evasive) or is_noncommittal(self.answer))
        self.short = bool(self.question) and bool(claims) and is_short(self.answer)
        # The answer's statements stand for it in answer relevance too (below), so
        # that each text is embedded once.
        self.answer_parts = [clean_line(self.answer)] if self.short else (
            claims or [self.answer])
        # Answer relevance reads the question and the answer only (the paper's: it
        # "does not take into account factuality"). A short answer, or a first
        # sentence that refers back ("It takes forty minutes.", "Its founder ..."),
        # lacks the subject the question names: it is also read in the question's
        # frame ("How long does the crossing take: It takes forty minutes.").
        first = self.answer_parts[0] if self.question and self.answer_parts else ""
        self.framed = framed_statement(self.question, first) \
            if first and (self.short or refers_back(first)) else ""
        if not claims or Metric.FAITHFULNESS not in self.metrics:
            self.statements = []
        elif self.short:
            self.statements = [framed_statement(self.question, self.answer_parts[0])]
        else:
            self.statements = claims
        # An answer that opens on a pronoun ("It lasts two years.") speaks of what the
        # question asks about: that statement's vector is read with the question.
        self.read_as: dict[str, str] = {}
        if self.question and self.statements and not self.short \
                and opens_with_pronoun(self.statements[0]):
            first = self.statements[0]
            self.read_as[first] = framed_statement(self.question, first)
        self.rarity = embedder.rarity
        compound = question_parts(self.question) \
            if metrics & {Metric.CONTEXT_RELEVANCE, Metric.ANSWER_RELEVANCE} else []
        self.question_parts = compound if Metric.CONTEXT_RELEVANCE in metrics else []
        # The parts an answer of its own sentences must each answer (a short answer's
        # kind of fact is checked instead: a phrase is near no part on its own). A
        # part of question words only ("When" of "When and where ...") asks nothing.
        self.asked_parts = [p for p in compound if content_tokens(p)] \
            if Metric.ANSWER_RELEVANCE in metrics and self.answer and not self.short else []
        # A long context: each statement (and the question) is read against its own
        # window of sentences, and only those are embedded (``windows``).
        self.windows: dict[str, list[int]] | None = None
        if len(self.sentence_texts) > ALL_SENTENCES:
            self.evidence = build_evidence(self.contexts)
            index = SentenceIndex(self.evidence)
            self.windows = {s: index.best(content_tokens(s), self.rarity, PER_STATEMENT)
                            for s in self.statements}
            if self.question:
                asked = " ".join((self.question, *self.question_parts))
                self.windows[self.question] = index.best(content_tokens(asked), self.rarity,
                                                         PER_QUESTION)
        self.texts = self._texts_to_embed()
        # The model runs on the embedder's workers (if it has any) while this thread
        # prepares the context's tokens.
        self.pending = embedder.start(self.texts) if self.texts else None
        if self.windows is None:
            self.evidence = build_evidence(self.contexts)

    def _prepare(self) -> tuple[_VecFn, Vectors, FramedSupport | None]:
        """Wait for the vectors; the context's sentence vectors (all of them, or none
        when the context is read in windows) and a short or one-sentence answer's
        reading in the question's frame."""
        texts = self.texts
        vectors = self.pending.result() if self.pending else np.zeros((0, 0), np.float32)
        index = {t: i for i, t in enumerate(texts)}

        def vec(text: str) -> Vectors:
            row: Vectors = vectors[index[text]]
            return row

        sentence_vectors = np.stack([vec(t) for t in self.evidence.texts]) \
            if self._context_needed() and self.windows is None \
            else np.zeros((0, 1), np.float32)
        framed = None
        if self.short and self.statements and self._context_needed():
            evidence, own = self._read_against(self.statements[0], vec, sentence_vectors)
            framed = framed_support(self.question, vec(self.question), self.answer_parts[0],
                                    evidence, own, self.rarity)
        return vec, sentence_vectors, framed

    def _read_against(self, text: str, vec: _VecFn, sentence_vectors: Vectors
                      ) -> tuple[Evidence, Vectors]:
        """The context ``text`` is read against, and its sentences' vectors: the whole
        context, or in a long one the text's window."""
        if self.windows is None:
            return self.evidence, sentence_vectors
        window = self.windows.get(text) or self.windows.get(self.question, [0])
        return narrowed(self.evidence, window), np.stack(
            [vec(self.evidence.sentences[i].text) for i in window])

    def measure(self) -> tuple[list[Measured], dict[str, float]]:
        """Each statement's measured evidence, as the support models read it (empty
        when faithfulness has nothing to verify), and the answer's as a whole."""
        vec, sentence_vectors, framed = self._prepare()
        measured = self._measured(vec, sentence_vectors, framed)
        return measured, self._answer_evidence(measured)

    def _answer_evidence(self, measured: list[Measured]) -> dict[str, float]:
        return answer_evidence([m.statement for m in measured] if not self.short
                               else self.answer_parts, [m.features for m in measured],
                               self.evidence, self.answer, self.passage_words)

    def _measured(self, vec: _VecFn, sentence_vectors: Vectors,
                  framed: FramedSupport | None) -> list[Measured]:
        if not self.statements or not self.evidence.sentences:
            return []
        if self.short:
            if framed is None:  # no content token to look for (a bare "yes")
                return []
            return [Measured(self.statements[0], "short", framed.features, framed.reason)]
        units = _with_adjacent_pairs(sentence_vectors)
        found: list[StatementEvidence] = []
        for s in self.statements:
            evidence, own = self._read_against(s, vec, sentence_vectors)
            found.append(statement_evidence(
                s, vec(self.read_as.get(s, s)), evidence, units if self.windows is None
                else _with_adjacent_pairs(own), self.rarity,
                similarity_of=self._similarity, known=self.embedder.knows))
        return [Measured(s, "statement", e.features, e.reason())
                for s, e in zip(self.statements, found, strict=True)]

    def score(self, models: SupportModels | None, checker: Checker | None = None) -> Scores:
        vec, sentence_vectors, framed = self._prepare()
        results: dict[Metric, MetricResult] = {}
        verdicts: tuple[StatementVerdict, ...] = ()
        kept: tuple[str, ...] = ()
        if Metric.FAITHFULNESS in self.metrics and checker is not None:
            results[Metric.FAITHFULNESS], verdicts = self._checked(checker)
        elif Metric.FAITHFULNESS in self.metrics and models is not None:
            results[Metric.FAITHFULNESS], verdicts = self._faithfulness(
                self._measured(vec, sentence_vectors, framed), models)
        if Metric.ANSWER_RELEVANCE in self.metrics:
            results[Metric.ANSWER_RELEVANCE] = self._answer_relevance(vec)
        if Metric.CONTEXT_RELEVANCE in self.metrics:
            results[Metric.CONTEXT_RELEVANCE], kept = self._context_relevance(
                vec, sentence_vectors)
        results |= {m: r for m, r in self.skipped.items() if m in self.requested}
        return Scores(judge="", results=results, statements=verdicts,
                      context_sentences=len(self.evidence.sentences), kept_sentences=kept)

    def _context_needed(self) -> bool:
        return bool(self.sentence_texts) and (
            (Metric.FAITHFULNESS in self.metrics and bool(self.statements))
            or (Metric.CONTEXT_RELEVANCE in self.metrics and bool(self.question)))

    def _texts_to_embed(self) -> list[str]:
        wanted: list[str] = []
        if self.question and self.answer and Metric.ANSWER_RELEVANCE in self.metrics:
            wanted += [self.question, *self.answer_parts, self.framed, *self.asked_parts]
        if self._context_needed():
            sentences = self.sentence_texts if self.windows is None else [
                self.sentence_texts[i] for i in sorted({i for w in self.windows.values()
                                                        for i in w})]
            wanted += [self.question, *self.question_parts, *self.statements,
                       *self.read_as.values(), *sentences]
        return list(dict.fromkeys(t for t in wanted if t))

    def _faithfulness(self, measured: list[Measured], models: SupportModels
                      ) -> tuple[MetricResult, tuple[StatementVerdict, ...]]:
        """The fitted probability that the answer holds no unsupported statement, read
        from its statements' fitted supports and its evidence as a whole (the share of
        its words the context holds among them), leaning toward that share
        (``SupportModels.faithfulness``). Each statement's verdict is its own support
        cut at one half."""
        if not self.answer:
            return MetricResult.unscored(MetricStatus.NO_ANSWER), ()
        if not self.evidence.sentences:
            return MetricResult.unscored(MetricStatus.NO_CONTEXT), ()
        if not measured:
            reason = "the answer declines to answer" if self.refusal else \
                "the answer states nothing the context could support"
            return MetricResult.unscored(MetricStatus.NO_STATEMENTS, reason), ()
        whole = self._answer_evidence(measured)
        if copied(whole, self.short):
            return MetricResult.scored(1.0), tuple(
                StatementVerdict(m.statement, True, "word for word in the context")
                for m in measured)
        degrees = [(models.short if m.kind == "short" else models.statement)
                   .probability(m.features) for m in measured]
        within = [models.statement_within.probability(m.features)
                  for m in measured if m.kind == "statement"]
        verdicts = tuple(StatementVerdict(m.statement, d >= 0.5, f"support {d:.2f}: {m.reason}")
                         for m, d in zip(measured, degrees, strict=True))
        answer = with_supports(whole, degrees, within)
        return MetricResult.scored(models.faithfulness(answer)), verdicts

    def _checked(self, checker: Checker) -> tuple[MetricResult, tuple[StatementVerdict, ...]]:
        """Faithfulness by a brought checker: each statement against windows of the
        passages (in a long context, of its own sentences), the mean probability."""
        if not self.answer:
            return MetricResult.unscored(MetricStatus.NO_ANSWER), ()
        if not self.evidence.sentences:
            return MetricResult.unscored(MetricStatus.NO_CONTEXT), ()
        if not self.statements:
            reason = "the answer declines to answer" if self.refusal else \
                "the answer states nothing the context could support"
            return MetricResult.unscored(MetricStatus.NO_STATEMENTS, reason), ()
        windows = [_windows([self.sentence_texts[i] for i in self.windows[s]]
                            if self.windows is not None else self.sentence_texts)
                   for s in self.statements]
        checks = checker.check([Statement(s) for s in self.statements], windows)
        if len(checks) != len(self.statements):
            raise ValueError(f"checker {checker.name} returned {len(checks)} checks for "
                             f"{len(self.statements)} statements")
        verdicts = tuple(StatementVerdict(s, c.probability >= 0.5,
                                          f"{checker.name} support {c.probability:.2f}"
                                          + (f": {c.evidence[:160]}" if c.evidence else ""))
                         for s, c in zip(self.statements, checks, strict=True))
        value = sum(min(1.0, max(0.0, c.probability)) for c in checks) / len(checks)
        return MetricResult.scored(value), verdicts

    def _similarity(self, first: str, second: str) -> float:
        """Cosine of two short texts found only while scoring (a second, small call
        to the model; the embedder's cache keeps repeats cheap)."""
        pair = self.embedder.embed([first, second])
        return float(pair[0] @ pair[1])

    def _answer_relevance(self, vec: _VecFn) -> MetricResult:
        """From the question and the answer only: the passages never move it."""
        if not self.question:
            return MetricResult.unscored(MetricStatus.NO_QUESTION)
        if not self.answer:
            return MetricResult.unscored(MetricStatus.NO_ANSWER)
        if self.refusal:
            return MetricResult(0.0, MetricStatus.SCORED, "noncommittal answer")
        similarity = float(vec(self.question) @ self._answer_vector(vec))
        # Markup is no content: a list's "1." or a citation's "[2]" adds nothing.
        plain = "\n".join(clean_line(line) for line in self.answer.splitlines())
        answered = [(part, max(float(vec(part) @ vec(s)) for s in self.answer_parts))
                    for part in self.asked_parts]
        value, reason = answer_relevance(self.question, similarity, plain, self.rarity,
                                         answered)
        return MetricResult(min(1.0, max(0.0, value)), MetricStatus.SCORED, reason)

    def _answer_vector(self, vec: _VecFn) -> Vectors:
        """The answer's direction: the normalised sum of its sentences' vectors. The
        paper averages over questions generated from the answer, so each of its
        statements counts alike, however long the answer (one embedding of the
        whole would read its first 256 word pieces only)."""
        parts = [vec(part) for part in self.answer_parts]
        if self.framed:
            parts[0] = FRAMED_WEIGHT * vec(self.framed) + (1 - FRAMED_WEIGHT) * parts[0]
        total = np.sum(parts, axis=0)
        result: Vectors = total / max(float(np.linalg.norm(total)), 1e-12)
        return result

    def _context_relevance(self, vec: _VecFn, sentence_vectors: Vectors
                           ) -> tuple[MetricResult, tuple[str, ...]]:
        if not self.question:
            return MetricResult.unscored(MetricStatus.NO_QUESTION), ()
        if not self.evidence.sentences:
            return MetricResult.unscored(MetricStatus.NO_CONTEXT), ()
        questions = [(q, vec(q)) for q in (self.question, *self.question_parts)]
        # In a long context only the question's window is scored: the sentences that
        # hold none of its terms count as not needed.
        evidence, vectors = self._read_against(self.question, vec, sentence_vectors)
        needs = sentence_need(questions, evidence, vectors, self.rarity)
        kept = tuple(s for s, n in zip(evidence.texts, needs, strict=True) if n >= 0.5)
        return MetricResult.scored(float(sum(needs)) / len(self.evidence.sentences)), kept


def _brought_checker(spec: Checker | str | os.PathLike[str] | None) -> Checker | None:
    """The checker a user brings, loaded now so that a wrong directory fails at
    construction with its reason, not on every record."""
    if spec is None or isinstance(spec, Checker):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        from ragas_trace.judges.local.onnx_checker import OnnxChecker

        return OnnxChecker.from_directory(Path(spec))
    raise ValueError(f"checker: expected a Checker or a model directory, got "
                     f"{type(spec).__name__}")


def _windows(sentences: Sequence[str]) -> list[Window]:
    """Consecutive sentences joined up to about ``WINDOW_WORDS`` words each."""
    out: list[Window] = []
    current: list[str] = []
    words = 0
    for sentence in sentences:
        n = len(sentence.split())
        if current and words + n > WINDOW_WORDS:
            out.append(Window(" ".join(current)))
            current, words = [], 0
        current.append(sentence)
        words += n
    if current:
        out.append(Window(" ".join(current)))
    return out


def _with_adjacent_pairs(vectors: Vectors) -> Vectors:
    """Sentence vectors plus one vector per pair of neighbours (normalised sum), since
    one answer sentence often summarises two context sentences."""
    if len(vectors) < 2:
        return vectors
    pairs = vectors[:-1] + vectors[1:]
    pairs /= np.clip(np.linalg.norm(pairs, axis=1, keepdims=True), 1e-12, None)
    return np.concatenate([vectors, pairs])
