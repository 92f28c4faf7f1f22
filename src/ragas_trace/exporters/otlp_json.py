"""``OtlpJsonFileExporter``: spans as OTLP/JSON lines, one
``ExportTraceServiceRequest`` per line (the file format of the OpenTelemetry
Collector's ``file`` exporter and ``otlpjsonfile`` receiver): ids as hex strings,
enums as integers, 64-bit integers as strings, field names in lowerCamelCase."""

from __future__ import annotations

import base64
import json
import logging
import threading
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger("ragas_trace")

_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId"})


def _hex_ids(node: Any) -> Any:
    """protobuf's JSON mapping writes bytes as base64; OTLP/JSON wants hex ids."""
    if isinstance(node, dict):
        return {k: (base64.b64decode(v).hex() if k in _ID_FIELDS and isinstance(v, str)
                    else _hex_ids(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


class OtlpJsonFileExporter(SpanExporter):
    """Appends one JSON line per export call to ``path`` (needs the otlp extra)."""

    def __init__(self, path: str | PathLike[str]) -> None:
        try:
            from google.protobuf import json_format
            from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        except ImportError as exc:
            raise ImportError("OtlpJsonFileExporter needs the otlp extra: "
                              "pip install 'ragas-trace[otlp]'") from exc
        self._encode = encode_spans
        self._json_format = json_format
        self.path = Path(path)
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            message = self._json_format.MessageToDict(self._encode(spans))
            line = json.dumps(_hex_ids(message), separators=(",", ":"), ensure_ascii=False)
            with self._lock, self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
        except (OSError, ValueError) as exc:
            logger.warning("writing spans to %s failed: %s", self.path, exc)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
