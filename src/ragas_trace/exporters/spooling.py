"""The spool side of ``ScoringSpanProcessor`` (a mixin of it): at shutdown, what the
deadline leaves undelivered goes to its ``Spool`` (roots not scored yet with their
descendants, spans not exported yet with the annotations waiting for them,
annotations not sent yet); at a later start, ``replay`` takes such entries over."""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from ragas_trace._internal_errors import record_internal_error
from ragas_trace.exporters.annotations import AnnotationSinks
from ragas_trace.exporters.annotations.scores import ScoreAnnotation
from ragas_trace.exporters.annotations.sinks import Prepared
from ragas_trace.exporters.export_queue import ExportQueue
from ragas_trace.exporters.metrics import ScorerMetrics
from ragas_trace.exporters.span_json import span_from_json, span_to_json
from ragas_trace.exporters.spool import Entry, Spool
from ragas_trace.scorer.background import BackgroundScorer
from ragas_trace.scorer.outcome import EvaluationStatus

logger = logging.getLogger("ragas_trace")


@dataclass
class Held:
    span: ReadableSpan
    deadline: float
    descendants: Sequence[ReadableSpan] = ()  # kept only with a spool


class Spooling:
    # The processor's, which these methods share.
    spool: Spool | None
    metrics: ScorerMetrics
    annotations: AnnotationSinks | None
    scorer: BackgroundScorer
    _lock: threading.Lock
    _held: dict[tuple[int, int], Held]
    _awaiting: dict[tuple[int, int], Prepared]
    _downstream: SpanProcessor | None
    _closed: bool
    _warned_corrupt: bool
    _app_label: Callable[[ReadableSpan], str]
    _hold: Callable[[ReadableSpan, Sequence[ReadableSpan]], None]
    _send: Callable[[ReadableSpan], None]
    _deliver_annotations: Callable[[Prepared], None]
    _key: Callable[[ReadableSpan], tuple[int, int]]

    def replay(self, entries: Sequence[Entry], window: int | None = None) -> int:
        """What an earlier process spooled (``Spool.claim``): roots not scored yet are
        held and scored here (counted as claimed, not as new requests), spans not
        exported yet are exported, annotations are sent (after their span). With
        ``window``, a spooled root waits until fewer than ``window`` spans are held,
        so that a long spool is scored at the judge's pace instead of timing out in
        the hold. How many entries were taken; a malformed one is counted as corrupt.
        Never raises."""
        # Every root taken over is counted as claimed before any is scored: killed
        # while it replays, this process then owes them all (counted lost after it).
        roots: list[list[ReadableSpan] | None] = []
        for entry in entries:
            spans = None
            if entry.get("kind") == "held":
                try:
                    spans = [span_from_json(s) for s in entry["spans"]]
                    self.metrics.spool_request("claimed", self._app_label(spans[0]),
                                               self.scorer.judge_name)
                except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                    self._corrupt(entry, exc)
                    spans = []
            roots.append(spans)
        taken = 0
        for entry, spans in zip(entries, roots, strict=True):
            if spans == []:
                continue  # unreadable, counted above
            if spans is not None and window is not None:
                self._wait_below(window)
            try:
                if spans is not None:
                    self._hold(spans[0], spans[1:])
                else:
                    self._replay_one(entry)
                taken += 1
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                self._corrupt(entry, exc)
        return taken

    def _corrupt(self, entry: Entry, exc: Exception) -> None:
        kind = entry.get("kind") if isinstance(entry, Mapping) else None
        self.metrics.spool(str(kind or "held"), "corrupt")
        if kind == "held":  # its request, counted as written, ends here: lost
            self.metrics.spool_request("claimed", None, self.scorer.judge_name)
            self.metrics.not_scored(EvaluationStatus.LOST, None, self.scorer.judge_name)
        if not self._warned_corrupt:
            self._warned_corrupt = True
            logger.warning("ragas-trace: a spool entry could not be read (%s: %s); "
                           "skipped (counted in ragas_spool_total, logged once)",
                           type(exc).__name__, exc)

    # -- internals -------------------------------------------------------------------

    def _wait_below(self, window: int) -> None:
        while True:  # the hold shrinks without a notice to wait on: poll
            with self._lock:
                if len(self._held) < window or self._closed:
                    return
            time.sleep(0.05)

    def _replay_one(self, entry: Entry) -> None:
        kind = entry["kind"]
        if kind == "span":
            span = span_from_json(entry["span"])
            prepared = self._prepared_from(entry.get("annotations", []))
            if prepared is not None and isinstance(self._downstream, ExportQueue):
                with self._lock:
                    self._awaiting[self._key(span)] = prepared
                prepared = None
            self._send(span)
            if prepared is not None:
                self._deliver_annotations(prepared)
        elif kind == "annotation":
            prepared = self._prepared_from([entry["annotation"]])
            if prepared is not None:
                self._deliver_annotations(prepared)

    def _prepared_from(self, items: Sequence[Mapping[str, object]]) -> Prepared | None:
        """Spooled annotations (each with its ``sink``) in the sinks' order; those for a
        sink this process does not have are counted lost."""
        if not items:
            return None
        annotations = [(str(item["sink"]), ScoreAnnotation(**{  # type: ignore[arg-type]
            k: v for k, v in item.items() if k != "sink"})) for item in items]
        names = self.annotations.names if self.annotations is not None else []
        prepared: Prepared = [[a for sink, a in annotations if sink == name] for name in names]
        for sink in {sink for sink, _ in annotations if sink not in names}:
            self.metrics.annotations(sink, "lost",
                                     sum(1 for s, _ in annotations if s == sink))
        return prepared if any(prepared) else None

    def _spool_held(self, leftovers: list[Held]) -> int:
        """Shutdown: the held roots (with their descendants) into the spool, in order;
        how many it took."""
        if self.spool is None or not leftovers:
            return 0
        entries: list[Entry] = []
        for held in leftovers:
            try:
                entries.append({"kind": "held", "spans": [
                    span_to_json(s) for s in (held.span, *held.descendants)]})
            except (ValueError, TypeError) as exc:
                record_internal_error("processor.spool", exc)
                break
        written = self.spool.write(entries)
        judge = self.scorer.judge_name
        for held in leftovers[:written]:
            self.metrics.spool_request("written", self._app_label(held.span), judge)
        return written

    def _spill_exports(self, spans: Sequence[ReadableSpan]) -> int:
        """The export queue's shutdown: spans still queued at its deadline, with the
        annotations waiting for them, into the spool; how many it took (a prefix)."""
        if self.spool is None:
            return 0
        names = self.annotations.names if self.annotations is not None else []
        entries: list[Entry] = []
        waiting: list[Prepared | None] = []
        with self._lock:
            for span in spans:
                waiting.append(self._awaiting.pop(self._key(span), None))
        for span, prepared in zip(spans, waiting, strict=True):
            try:
                entries.append({"kind": "span", "span": span_to_json(span),
                                "annotations": annotations_json(names, prepared)})
            except (ValueError, TypeError) as exc:
                record_internal_error("processor.spool", exc)
                break
        written = self.spool.write(entries)
        with self._lock:  # the rest are lost with their spans (``_settled``)
            for span, prepared in zip(spans[written:], waiting[written:], strict=False):
                if prepared is not None:
                    self._awaiting[self._key(span)] = prepared
        return written

    def _spill_annotations(self, sink: str, items: Sequence[ScoreAnnotation]) -> int:
        if self.spool is None:
            return 0
        return self.spool.write([{"kind": "annotation", "annotation": {
            "sink": sink, **dataclasses.asdict(a)}} for a in items])


def annotations_json(names: Sequence[str], prepared: Prepared | None
                      ) -> list[dict[str, object]]:
    if prepared is None:
        return []
    return [{"sink": name, **dataclasses.asdict(a)}
            for name, items in zip(names, prepared, strict=False) for a in items]
