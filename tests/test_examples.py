"""Every script under examples/ runs, offline, in a process of its own, and exits 0
with output; one whose docstring has an ``Expected output: TEXT`` line must print
TEXT. Each runs in a fresh virtualenv made by exactly the install line its docstring
gives (``python -m venv``, then that ``pip install -e '.[EXTRAS]'`` in the checkout),
not in the dev virtualenv that has every extra: one virtualenv per distinct line,
pip's cache makes the repeats quick. New examples are picked up without touching
this file (``_name.py`` files are helpers the examples share). The quick starts, the
QUICK START regions of three of them, also run on their own, as a reader pastes
them, and the README's runs after the README's set-up (``make demo``)."""

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TIMEOUT_S = 300  # the local judge loads its model in each process; the machine may be busy
INSTALL_TIMEOUT_S = 1200  # a first install downloads the wheels
_EXPECTED = re.compile(r"^Expected output: (.+)$", re.MULTILINE)


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
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


class Virtualenvs:
    """Fresh virtualenvs under ``root``, one per install line, made on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: dict[str, Path] = {}

    def python_for(self, line: str) -> Path:
        if line not in self.made:
            extras = re.fullmatch(r"pip install -e '(\.\[[\w,-]+\])'", line)
            assert extras is not None, line
            venv = self.root / f"venv-{len(self.made)}"
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                           timeout=TIMEOUT_S)
            done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-e", extras[1]],
                                  cwd=ROOT, env=_clean_env(), capture_output=True, text=True,
                                  timeout=INSTALL_TIMEOUT_S, check=False)
            assert done.returncode == 0, f"{line}:\n{done.stderr[-3000:]}"
            self.made[line] = venv / "bin" / "python"
        return self.made[line]


def _clean_env() -> dict[str, str]:
    """The environment without what would let the dev virtualenv's packages in."""
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Virtualenvs:
    return Virtualenvs(tmp_path_factory.mktemp("example-venvs"))


def _run(python: Path, script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), str(script)], cwd=cwd, env=_clean_env(),
                          capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def test_there_are_examples() -> None:
    assert {"score_one_record.py", "service_mode.py"} <= {s.name for s in SCRIPTS}


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_every_example_names_its_install_line(script: Path) -> None:
    assert gen_docs.install_line(script).startswith("pip install -e '.[")


def test_the_readme_quick_start_runs_after_the_readme_set_up() -> None:
    """The README's one quick start needs no more than ``make demo`` installs."""
    line = gen_docs.install_line(EXAMPLES / f"{gen_docs.README_QUICK_START}.py")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo_rule = makefile.split("$(VENV)/.installed-demo:")[1].split("\n\n")[0]
    assert line.replace("pip install", "$(VENV)/bin/pip install -q") in demo_rule
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make demo " in readme.split("## Set-up")[1].split("## Quick start")[0]


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_example_runs_after_its_install_line(script: Path, venvs: Virtualenvs,
                                             tmp_path: Path) -> None:
    result = _run(venvs.python_for(gen_docs.install_line(script)), script, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), f"{script.name} printed nothing"
    expected = expected_output(script)
    if expected is not None:
        assert expected in result.stdout, result.stdout[-3000:]


@pytest.mark.slow
@pytest.mark.parametrize("name", gen_docs.QUICK_STARTS)
def test_quick_start_runs_as_pasted(name: str, venvs: Virtualenvs, tmp_path: Path) -> None:
    """Only the lines the docs show, in a file of their own, in an empty directory, in
    the virtualenv of the install line they name: nothing they use may come from the
    rest of the example."""
    script = EXAMPLES / f"{name}.py"
    pasted = tmp_path / "quick_start.py"
    pasted.write_text(gen_docs.quick_start_code(script) + "\n", encoding="utf-8")
    result = _run(venvs.python_for(gen_docs.install_line(script)), pasted, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'evaluation.status': 'scored'" in result.stdout, result.stdout[-3000:]
    for metric in ("faithfulness", "answer_relevance", "context_relevance"):
        assert re.search(rf"'{metric}': [01]\.\d", result.stdout), result.stdout[-3000:]
