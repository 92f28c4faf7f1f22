"""Judges: ``local`` (offline, the default) and ``openai`` (any OpenAI-compatible
endpoint), both behind the ``Judge`` protocol. ``resolve_judge`` turns a name into a
judge; each implementation is imported only when asked for."""

from __future__ import annotations

from ragas_trace.judges.base import Judge

JUDGE_NAMES = ("local", "openai")


def resolve_judge(spec: str | Judge | None = None) -> Judge:
    """``None`` or ``"local"`` -> ``LocalJudge()``; ``"openai"`` -> ``OpenAIJudge()``
    configured from the environment (``"openai:MODEL"`` picks the model); a ``Judge``
    object is returned as it is. Anything else raises ``ValueError``."""
    if spec is None or spec == "local":
        try:
            from ragas_trace.judges.local import LocalJudge
        except ImportError as exc:
            raise ImportError("the local judge needs the 'local' extra: "
                              "pip install 'ragas-trace[local]'") from exc
        return LocalJudge()
    if isinstance(spec, str):
        name, _, model = spec.partition(":")
        if name == "openai":
            from ragas_trace.judges.openai_judge import OpenAIJudge

            return OpenAIJudge(model=model or None)
        raise ValueError(f"judge: unknown judge {spec!r}; use one of {', '.join(JUDGE_NAMES)}, "
                         "'openai:MODEL' or a Judge object")
    if isinstance(spec, Judge):
        return spec
    raise ValueError(f"judge: expected a name or a Judge object, got {type(spec).__name__}")


__all__ = ["JUDGE_NAMES", "Judge", "resolve_judge"]
