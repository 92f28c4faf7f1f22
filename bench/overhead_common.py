"""What the two collector-overhead benchmarks share: the discarding exporter every
configuration exports to, the replay of a request's spans straight on the SDK (the
floor), the arithmetic of the report, and counting instructions under valgrind."""

from __future__ import annotations

import ctypes
import re
import shutil
import statistics
import subprocess
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class DiscardExporter(SpanExporter):
    """Drops spans, counting them (``DiscardExporter.exported``, for all instances) so
    the report can show each configuration's spans."""

    exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        DiscardExporter.exported += len(spans)
        return SpanExportResult.SUCCESS


def discarding_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DiscardExporter()))
    return provider


def span_replay(finished: Sequence[ReadableSpan]) -> Callable[[], None]:
    """A call making the spans of one captured request again, with the same names and
    attributes, straight on the SDK (root first, children under it)."""
    root = next(s for s in finished if s.parent is None)
    children = [(s.name, dict(s.attributes or {})) for s in finished if s.parent is not None]
    root_name, root_attrs = root.name, dict(root.attributes or {})
    tracer = discarding_provider().get_tracer("bench")

    def replay() -> None:
        span = tracer.start_span(root_name, attributes=root_attrs)
        ctx = trace.set_span_in_context(span)
        for name, attrs in children:
            tracer.start_span(name, ctx, attributes=attrs).end()
        span.end()

    return replay


def importable(module: str | None) -> bool:
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def added_costs(samples: dict[str, list[float]], not_configs: Collection[str]
                ) -> dict[str, float]:
    """Median over rounds of (configuration - base) in the same round."""
    base = samples["base"]
    return {n: statistics.median(s - b for s, b in zip(samples[n], base, strict=True))
            for n in samples if n != "base" and n not in not_configs}


def print_floor_ratio(name: str, ours: float, floor: float) -> None:
    print(f"(b) / {name} = {ours / floor:.2f}  (target <= 1.30): "
          f"{'met' if ours <= 1.3 * floor else 'NOT met'}")


def print_peer_ratios(ours: float, added: dict[str, float]) -> None:
    """(b) against the cheaper of the peers (c) and (d) that could be measured."""
    peers = {n: added[n] for n in ("c", "d") if n in added}
    if not peers:
        return
    cheaper = min(peers.values())
    print(f"(b) / min(c, d) = {ours / cheaper:.3f}  (target <= 0.200): "
          f"{'met' if ours <= cheaper / 5 else 'NOT met'}")
    for name, cost in peers.items():
        print(f"({name}) / (b) = {cost / ours:.1f}x")


def run_counted(invoke: Callable[[], object], n: int) -> None:
    """Call ``invoke`` ``n`` times inside a ctypes callback: ``count_instructions``
    has callgrind count only what runs inside ``ffi_call``, so imports, set-up and
    warm-up are left out."""
    def block() -> None:
        for _ in range(n):
            invoke()

    ctypes.CFUNCTYPE(None)(block)()


def count_instructions(command: list[str]) -> int:
    """Instructions executed inside ``run_counted`` by ``command`` (a Python process),
    under valgrind's callgrind. A count, unlike a time, does not depend on what else
    the machine runs, so the ratios it gives are steady on a shared machine."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    done = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
         "--toggle-collect=ffi_call*", *command],
        capture_output=True, text=True, check=True)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind: {done.stderr[-500:]}")
    return int(found.group(1))
