"""The demo's closing table: one row per request, built from the spans as exported
(scores and pass/fail labels as a backend would see them) plus the judge's
unsupported statements and the thresholds the labels were made with."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from opentelemetry.sdk.trace import ReadableSpan

from ragas_trace import semconv as sc
from ragas_trace.results import Metric, Scores

_ANSWER_METRICS = (Metric.FAITHFULNESS, Metric.ANSWER_RELEVANCE)
_SHORT = {Metric.FAITHFULNESS: "faith", Metric.ANSWER_RELEVANCE: "ans-rel",
          Metric.CONTEXT_RELEVANCE: "ctx-rel"}


@dataclass(frozen=True)
class RequestRow:
    question: str
    answer: str
    status: str
    scores: dict[Metric, float | None]
    labels: dict[Metric, str | None]
    unsupported: tuple[str, ...]
    # The pass thresholds the scoring processor labelled this row's span with.
    thresholds: Mapping[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool | None:
        """The answer's verdict from its pass/fail labels: False when faithfulness or
        answer relevance fails (context relevance rates the retriever, not the
        answer), True when those labelled pass; None when neither has a label. One
        label is enough: an evasive answer makes no statement, so it has no
        faithfulness label, and fails answer relevance."""
        labels = [label for m in _ANSWER_METRICS if (label := self.labels[m]) is not None]
        if not labels:
            return None
        return all(label == "pass" for label in labels)

    @property
    def why(self) -> str:
        """Why the answer fails: its first unsupported statement, then each failing
        answer score beside its threshold ("ans-rel 0.41 < 0.56"); for an answer that
        passes, that statement alone (empty when every statement is supported)."""
        parts = [f'"{self.unsupported[0]}"'] if self.unsupported else []
        parts += [f"{_SHORT[m]} {shown_score(value, 'fail')} < {self.thresholds[m]:g}"
                  if (value := self.scores[m]) is not None and m in self.thresholds
                  else f"{_SHORT[m]} fails"
                  for m in _ANSWER_METRICS if self.labels[m] == "fail"]
        return "; ".join(parts)


def is_evaluated_root(span: ReadableSpan) -> bool:
    """A RAG root span as the scoring processor exports it: CHAIN with a status."""
    attrs = span.attributes or {}
    return (attrs.get(sc.RAGAS_EVALUATION_STATUS) is not None
            and attrs.get(sc.SPAN_KIND) == sc.KIND_CHAIN)


def rows_from_spans(
    spans: Iterable[ReadableSpan], evidence: Callable[[str, str], Scores | None],
    thresholds: Mapping[str, float] | None = None,
) -> list[RequestRow]:
    """Rows for the RAG root spans (those carrying an evaluation status), in start
    order; ``thresholds``: those the spans were labelled with (shown with a failure)."""
    roots = sorted(filter(is_evaluated_root, spans), key=lambda s: s.start_time or 0)
    rows = []
    for span in roots:
        attrs = span.attributes or {}
        question = str(attrs.get(sc.INPUT_VALUE, ""))
        answer = str(attrs.get(sc.OUTPUT_VALUE, ""))
        scores = {m: _float(attrs.get(sc.metric_attribute(m))) for m in Metric}
        labels = {m: _str(attrs.get(sc.metric_label_attribute(m))) for m in Metric}
        found = evidence(question, answer)
        unsupported = tuple(v.statement for v in found.statements if not v.supported) \
            if found else ()
        rows.append(RequestRow(question, answer, str(attrs[sc.RAGAS_EVALUATION_STATUS]),
                               scores, labels, unsupported, dict(thresholds or {})))
    return rows


def render_table(rows: Sequence[RequestRow], width: int = 120, max_rows: int = 100) -> str:
    """A plain-text table: #, question, the three scores (✓ pass, ✗ fail), the answer's
    verdict and why it fails (``RequestRow.why``); the first ``max_rows`` requests."""
    rest = max(20, width - 4 - 3 * 9 - 6 - 8)
    q_width, s_width = rest * 2 // 5, rest - rest * 2 // 5
    header = (f"{'#':>3} {'question':<{q_width}} "
              + " ".join(f"{_SHORT[m]:>8}" for m in Metric)
              + f" {'answer':<6} {'why: failing score, unsupported statement':<{s_width}}")
    lines = [header, "-" * len(header)]
    for i, row in enumerate(rows[:max_rows], 1):
        cells = " ".join(f"{_score_cell(row.scores[m], row.labels[m]):>8}" for m in Metric)
        # No label: "-" for a scored row (a verdict cannot be read from its status),
        # the status (timeout, failed...) for the rest.
        unlabelled = "-" if row.status == "scored" else row.status[:6]
        verdict = {True: "pass", False: "FAIL", None: unlabelled}[row.passed]
        lines.append(f"{i:>3} {_clip(row.question, q_width):<{q_width}} {cells} "
                     f"{verdict:<6} {_clip(row.why, s_width)}".rstrip())
    if len(rows) > max_rows:
        lines.append(f"... and {len(rows) - max_rows} more requests (all in the exported spans)")
    return "\n".join(lines)


def summary(rows: Sequence[RequestRow], thresholds: Mapping[str, float] | None = None) -> str:
    """Requests and scored ones; per metric the mean and how many passed, and with
    ``thresholds`` (those the labels were made with) the pass mark."""
    scored = [r for r in rows if r.status == "scored"]
    parts = [f"{len(rows)} requests, {len(scored)} scored"]
    for metric in Metric:
        values = [v for r in scored if (v := r.scores[metric]) is not None]
        if values:
            passed = sum(1 for r in scored if r.labels[metric] == "pass")
            mark = f" (pass at >= {thresholds[metric]:g})" if thresholds and \
                metric in thresholds else ""
            parts.append(f"{metric}{mark}: mean {sum(values) / len(values):.2f}, "
                         f"{passed}/{len(values)} pass")
    return "; ".join(parts)


def _score_cell(value: float | None, label: str | None) -> str:
    if value is None:
        return "-"
    mark = "✓" if label == "pass" else "✗" if label == "fail" else " "
    return f"{shown_score(value, label)} {mark}"


def shown_score(value: float, label: str | None) -> str:
    """Two decimals; a failing score cut, not rounded, so that it reads below its
    threshold (0.507 against 0.51 shows as 0.50, not "0.51 < 0.51")."""
    if label == "fail":  # 1e-9: 0.29 * 100 is 28.999999999999996
        value = math.floor(value * 100 + 1e-9) / 100
    return f"{value:.2f}"


def _clip(text: str, width: int) -> str:
    return textwrap.shorten(" ".join(text.split()), width=width, placeholder="…") \
        if len(text) > width else text


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
