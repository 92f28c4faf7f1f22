"""The README and the docs cannot drift from the code: every generated block
(settings tables, CLI help, the figures from bench/results/*.json) is what
tools/gen_docs.py makes now, and the README stays short."""

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# 250 before the quick starts became whole programs that run as pasted (issue 26:
# imports, the offline model and store, the printed scores: about 85 lines more).
README_MAX_LINES = 340


def _gen_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "tools" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_docs"] = module
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()
DOCUMENTS = list(gen_docs.documents())


@pytest.mark.parametrize("path", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p in DOCUMENTS])
def test_generated_blocks_are_fresh(path: Path) -> None:
    assert gen_docs.stale_blocks(path) == [], "run: python tools/gen_docs.py"


def test_readme_quotes_the_committed_bench_figures() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "<!-- BEGIN GENERATED: figures-with-targets -->" in readme
    for _name, document in gen_docs.results_files():
        for figure in document["figures"].values():
            if figure.get("target"):
                assert figure["label"].replace("|", "\\|") in readme


def test_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= README_MAX_LINES


def test_bench_results_have_the_results_file_format() -> None:
    files = gen_docs.results_files()
    assert files
    for name, document in files:
        assert document["script"] == f"bench/{name}.py"
        assert (ROOT / document["script"]).is_file()
        assert document["date"] and document["machine"] and document["figures"]
        for figure in document["figures"].values():
            assert {"value", "label"} <= set(figure)


def test_a_changed_figure_makes_the_block_stale(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    results.mkdir()
    figure = {"value": 0.5, "label": "a ratio", "target": "≤ 1"}
    (results / "x.json").write_text(json.dumps(
        {"script": "bench/x.py", "date": "2026-12-01", "machine": "m",
         "figures": {"r": figure}}), encoding="utf-8")
    monkeypatch.setattr(gen_docs, "RESULTS", results)
    page = tmp_path / "page.md"
    page.write_text("<!-- BEGIN GENERATED: figures -->\nold\n<!-- END GENERATED: figures -->\n",
                    encoding="utf-8")
    assert gen_docs.stale_blocks(page) == ["figures"]
    page.write_text(gen_docs.render(page.read_text(encoding="utf-8"), "page"), encoding="utf-8")
    assert gen_docs.stale_blocks(page) == []
    assert "| a ratio | 0.5 |  | ≤ 1 | `x` 2026-12-01 |" in page.read_text(encoding="utf-8")
    figure["value"] = 0.6
    (results / "x.json").write_text(json.dumps(
        {"script": "bench/x.py", "date": "2026-12-01", "machine": "m",
         "figures": {"r": figure}}), encoding="utf-8")
    assert gen_docs.stale_blocks(page) == ["figures"]


def test_an_unknown_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="no generator for block 'nope'"):
        gen_docs.render("<!-- BEGIN GENERATED: nope -->\n<!-- END GENERATED: nope -->", "x")


def test_readme_links_point_at_files_in_the_checkout() -> None:
    readme = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == []


@pytest.mark.parametrize("name", gen_docs.QUICK_STARTS)
def test_readme_quick_start_is_the_example_file(name: str) -> None:
    """The README shows the example's QUICK START region verbatim, then the line that
    names the two lines to change for a real model."""
    readme = README.read_text(encoding="utf-8")
    code = gen_docs.quick_start_code(ROOT / "examples" / f"{name}.py")
    assert (f"<!-- BEGIN GENERATED: quickstart-{name} -->\n```python\n{code}\n```"
            in readme)
    block = readme.split(f"<!-- BEGIN GENERATED: quickstart-{name} -->")[1]
    note = block.split(f"<!-- END GENERATED: quickstart-{name} -->")[0].split("```\n\n")[-1]
    assert note.startswith("Offline as it stands") and "For a real model: change the `" in note


def test_a_quick_start_needs_its_markers(tmp_path: Path) -> None:
    script = tmp_path / "x.py"
    script.write_text('"""Doc."""\nprint(1)\n', encoding="utf-8")
    with pytest.raises(ValueError, match="no '# BEGIN QUICK START'"):
        gen_docs.quick_start_code(script)
    script.write_text("# BEGIN QUICK START\nprint(1)\n# END QUICK START\n", encoding="utf-8")
    assert gen_docs.quick_start_code(script) == "print(1)"



def test_make_phoenix_is_the_third_set_up_command() -> None:
    readme = README.read_text(encoding="utf-8")
    set_up = readme.split("## Set-up")[1].split("\n## ")[0]
    commands = [line.split("#")[0].strip() for line in set_up.split("```sh\n")[1]
                .split("```")[0].splitlines()]
    assert commands[1:4] == ["make demo", "make test", "make phoenix"]
