"""The local extra stays light: no PyTorch anywhere in its dependency tree."""

import re
from importlib import metadata


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_local_extra_does_not_pull_pytorch() -> None:
    local = [_name(r) for r in metadata.requires("ragas-trace") or []
             if 'extra == "local"' in r]
    assert set(local) == {"onnxruntime", "tokenizers"}
    seen: set[str] = set()
    todo = list(local)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # an optional dependency that is not installed
        todo += [_name(r) for r in requires if "extra ==" not in r]
    assert "torch" not in seen and "sentence-transformers" not in seen
    assert "onnxruntime" in seen and "numpy" in seen
