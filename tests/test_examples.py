"""Every script under examples/ runs, offline, in a process of its own, and exits 0
with output; one whose docstring has an ``Expected output: TEXT`` line must print
TEXT. New examples are picked up without touching this file (``_name.py`` files are
helpers the examples share). The README's quick starts, the QUICK START regions of
three of them, also run on their own, as a reader pastes them."""

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TIMEOUT_S = 300  # the local judge loads its model in each process; the machine may be busy
_EXPECTED = re.compile(r"^Expected output: (.+)$", re.MULTILINE)



def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_docs", EXAMPLES.parent / "tools" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = module
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()
SCRIPTS = gen_docs.example_scripts()


def expected_output(script: Path) -> str | None:
    docstring = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    match = _EXPECTED.search(docstring)
    return match.group(1).strip() if match else None


def test_there_are_examples() -> None:
    assert {"score_one_record.py", "service_mode.py"} <= {s.name for s in SCRIPTS}


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_example_runs(script: Path, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), f"{script.name} printed nothing"
    expected = expected_output(script)
    if expected is not None:
        assert expected in result.stdout, result.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", gen_docs.QUICK_STARTS)
def test_quick_start_runs_as_pasted(name: str, tmp_path: Path) -> None:
    """Only the lines the README shows, in a file of their own, in an empty directory:
    nothing they use may come from the rest of the example."""
    pasted = tmp_path / "quick_start.py"
    pasted.write_text(gen_docs.quick_start_code(EXAMPLES / f"{name}.py") + "\n",
                      encoding="utf-8")
    result = subprocess.run([sys.executable, str(pasted)], cwd=tmp_path, capture_output=True,
                            text=True, timeout=TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'evaluation.status': 'scored'" in result.stdout, result.stdout[-3000:]
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        assert re.search(rf"'{metric}': [01]\.\d", result.stdout), result.stdout[-3000:]
