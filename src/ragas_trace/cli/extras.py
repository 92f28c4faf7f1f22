"""What each command needs installed, checked before it does anything: a command run
without one of its extras exits 2 with the ``pip install`` line, rather than failing
half-way with a traceback or finishing with null scores."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable

# The modules each extra of pyproject.toml brings (the OTLP/gRPC exporter brings grpc,
# which the gateway's receiver imports itself).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "langchain": ("langchain_core",),
    "llamaindex": ("llama_index.core",),
    "local": ("onnxruntime", "tokenizers"),
    "otlp": ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.proto.grpc",
             "opentelemetry.exporter.prometheus", "grpc"),
}
EXIT_MISSING_EXTRA = 2


def judge_extras(judge: str | None) -> tuple[str, ...]:
    """The extras a judge name needs: ``local`` (the default) its model runtime; the
    OpenAI-compatible judge and ``off`` nothing beyond the core package."""
    return ("local",) if judge in (None, "local") else ()


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or a broken module
        return False


def missing_modules(extras: Iterable[str]) -> dict[str, list[str]]:
    """For each of ``extras`` with a module that cannot be imported: those modules."""
    missing = {}
    for extra in extras:
        absent = [m for m in EXTRA_MODULES[extra] if not _installed(m)]
        if absent:
            missing[extra] = absent
    return missing


def install_line(extras: Iterable[str]) -> str:
    names = ",".join(sorted(set(extras)))
    return f"pip install 'ragas-trace[{names}]' (in a clone: pip install -e '.[{names}]')"


def missing_message(command: str, extras: Iterable[str]) -> str | None:
    """The one-line error for ``command`` when one of ``extras`` is not installed."""
    needed = tuple(extras)
    missing = missing_modules(needed)
    if not missing:
        return None
    names = [f"'{extra}'" for extra in missing]
    what = (f"the {names[0]} extra is" if len(names) == 1
            else f"the {', '.join(names[:-1])} and {names[-1]} extras are")
    modules = ", ".join(m for ms in missing.values() for m in ms)
    return (f"ragas-trace {command}: {what} not installed (no module {modules}); "
            f"install what it needs: {install_line(needed)}")


def require(command: str, extras: Iterable[str]) -> bool:
    """Whether ``extras`` are all installed; when not, the error is printed on stderr
    and the command should return ``EXIT_MISSING_EXTRA``."""
    message = missing_message(command, extras)
    if message is not None:
        print(message, file=sys.stderr)
    return message is None
