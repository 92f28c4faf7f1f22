"""What every annotation backend writes, built on the scorer's thread from the held
span, the judge's outcome and the record it scored:

- one ``ScoreAnnotation`` per metric on the evaluated span (Phoenix span annotations,
  Langfuse scores) and the same on its trace (Phoenix trace annotations);
- one per retrieved passage that was scored, on the RETRIEVER span that returned it,
  where the judge has a per-passage verdict (Phoenix document annotations, which
  its retrieval metrics read)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace.exporters.content_policy import ContentPolicy
from ragas_trace.exporters.evaluation_span import explanation
from ragas_trace.exporters.score_attributes import label, short_reason
from ragas_trace.extract import documents_of
from ragas_trace.metrics.sentences import split_sentences
from ragas_trace.record import RagRecord
from ragas_trace.results import Metric, MetricStatus, Scores
from ragas_trace.scorer.outcome import EvaluationStatus, Outcome

# Phoenix's annotator kinds: an LLM judge, or deterministic code (the offline
# local judge: embeddings and rules, no generative model).
LLM = "LLM"
CODE = "CODE"

SPAN, TRACE, DOCUMENT = "span", "trace", "document"
RELEVANT, IRRELEVANT = "relevant", "irrelevant"


@dataclass(frozen=True, slots=True)
class ScoreAnnotation:
    """One metric of one evaluated span (``target`` span or trace), or the relevance
    of one retrieved passage (``target`` document: ``span_id`` is then the
    RETRIEVER span's and ``document_position`` the passage's index there).
    ``score`` is ``None`` when the metric was not scored; ``label`` is then its
    status and ``explanation`` the reason."""

    trace_id: str  # 32 hex digits, as OTLP backends show it
    span_id: str  # 16 hex digits
    name: str
    score: float | None
    label: str
    explanation: str
    annotator_kind: str
    judge: str
    threshold: float
    target: str = SPAN
    document_position: int | None = None
    timestamp_ns: int = 0  # the evaluated span's end: a stable time for upserts


def annotator_kind(judge: str) -> str:
    return CODE if judge.split(":", 1)[0] == "local" else LLM


def score_annotations(span: ReadableSpan, outcome: Outcome, judge: str,
                      thresholds: dict[str, float], policy: ContentPolicy,
                      record: RagRecord | None = None,
                      retrievers: Sequence[ReadableSpan] = ()) -> list[ScoreAnnotation]:
    """The annotations of a scored request (none for any other outcome, or a span
    without ids). ``policy`` decides whether a statement of the answer may leave;
    ``record`` and ``retrievers`` give the per-passage ones."""
    context = span.context
    if outcome.status is not EvaluationStatus.SCORED or outcome.scores is None or not context:
        return []
    scores = outcome.scores
    trace_id = f"{context.trace_id:032x}"
    kind = annotator_kind(judge)
    out: list[ScoreAnnotation] = []
    for metric in Metric:
        result = scores.result(metric)
        if result.status is MetricStatus.SKIPPED:
            continue
        threshold = thresholds.get(str(metric), 0.5)
        out.append(ScoreAnnotation(
            trace_id=trace_id, span_id=f"{context.span_id:016x}",
            name=str(metric), score=result.value,
            label=(label(result.value, threshold) if result.value is not None
                   else str(result.status)),
            explanation=explain(metric, scores, policy),
            annotator_kind=kind, judge=judge, threshold=threshold,
            timestamp_ns=span.end_time or 0))
    out += [replace(a, target=TRACE) for a in out]
    if record is not None:
        threshold = thresholds.get(str(Metric.CONTEXT_RELEVANCE), 0.5)
        # Phoenix 20.26.1 computes its retrieval metrics (NDCG, precision, hit) from
        # LLM document annotations only: so these are LLM whatever the judge
        # (``metadata.judge`` says which).
        out += document_annotations(scores, record, retrievers, trace_id,
                                    LLM, judge, threshold)
    return out


def passage_shares(contexts: Sequence[str], kept: Sequence[str],
                   total: int) -> dict[str, tuple[int, int]] | None:
    """Per passage text, (sentences the judge kept, sentences): the judge's kept
    sentences matched back to the passages they came from, in order. ``None`` when
    the passages do not split into the judge's ``total`` sentences (then the
    judge's sentences are not these, and no per-passage verdict can be made up)."""
    split = [split_sentences(c) for c in contexts]
    if total <= 0 or sum(len(s) for s in split) != total:
        return None
    left = Counter(kept)
    shares: dict[str, tuple[int, int]] = {}
    for text, sentences in zip(contexts, split, strict=True):
        taken = 0
        for sentence in sentences:
            if left[sentence] > 0:
                left[sentence] -= 1
                taken += 1
        if sentences:
            shares.setdefault(text, (taken, len(sentences)))
    return shares


def document_annotations(scores: Scores, record: RagRecord,
                         retrievers: Sequence[ReadableSpan], trace_id: str, kind: str,
                         judge: str, threshold: float) -> list[ScoreAnnotation]:
    """Context relevance of each retrieved passage that was scored: the share of its
    sentences the judge kept (needed to answer); relevant when it holds one. A
    passage retrieved but not scored (dropped before the prompt) gets none."""
    if scores.context_relevance is None:
        return []
    shares = passage_shares(record.context_texts, scores.kept_sentences,
                            scores.context_sentences)
    if not shares:
        return []
    out: list[ScoreAnnotation] = []
    for retriever in retrievers:
        if retriever.context is None:
            continue
        for position, doc in enumerate(documents_of(retriever)):
            share = shares.get(doc.content)
            if share is None:
                continue
            taken, total = share
            out.append(ScoreAnnotation(
                trace_id=trace_id, span_id=f"{retriever.context.span_id:016x}",
                name=str(Metric.CONTEXT_RELEVANCE), score=taken / total,
                label=RELEVANT if taken else IRRELEVANT,
                explanation=f"{taken} of {total} sentences needed to answer",
                annotator_kind=kind, judge=judge, threshold=threshold,
                target=DOCUMENT, document_position=position,
                timestamp_ns=retriever.end_time or 0))
    return out


def explain(metric: Metric, scores: Scores, policy: ContentPolicy) -> str:
    """The first unsupported statement for faithfulness (what a reviewer checks
    first), when the content policy lets it out; else counts, the judge's reason
    or why the metric was not scored."""
    result = scores.result(metric)
    if metric is Metric.FAITHFULNESS and result.value is not None:
        unsupported = next((s for s in scores.statements if not s.supported), None)
        text = policy.text(unsupported.statement) if unsupported is not None else None
        if text:
            return short_reason(f"unsupported: {text}")
    if metric is Metric.ANSWER_RELEVANCE and result.reason and not scores.generated_questions:
        # The local judge's reason (similarity, new content) can quote the answer.
        reason = policy.text(result.reason)
        if reason:
            return short_reason(reason)
    return explanation(metric, result, scores)
