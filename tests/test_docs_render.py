"""The docs render as a reader sees them (tools/check_docs_render.py, headless
Chromium): names in tables are never broken mid-word, the home page's diagram and the
settings tables fit a 1280-pixel window; and the check catches a page that breaks
those."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "check_docs_render", ROOT / "tools" / "check_docs_render.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_docs_render"] = module
    spec.loader.exec_module(module)
    return module


tool = _tool()
BROWSER = tool.chromium()
pytestmark = pytest.mark.skipif(BROWSER is None,
                                reason="needs Chromium: apt-get install chromium")

# What the theme did before stylesheets/extra.css: code in tables broken anywhere.
_BROKEN_PAGE = """<!doctype html><meta charset="utf-8">
<div class="md-content" style="width:600px"><div class="md-typeset">
<div class="md-typeset__scrollwrap" style="overflow-x:auto"><table style="width:100%">
<tr><td style="width:90px"><code style="word-break:break-word">RAGAS_TRACE_EXPORTER</code></td>
<td>where spans go when no exporter is passed</td></tr></table></div>
<pre><code style="display:block;overflow:auto">{wide}</code></pre>
</div></div>"""


def test_the_built_docs_render_without_broken_names_or_clipping(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                   cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    shots = tmp_path / "shots"
    assert tool.check(site, shots, BROWSER) == []
    assert {p.name for p in shots.iterdir()} == {"home.png", "reference-settings.png"}


def test_the_check_fails_on_a_broken_name_a_clipped_block_and_an_empty_page(
        tmp_path: Path) -> None:
    page = _BROKEN_PAGE.replace("{wide}", "your chain ──callbacks──▶ " * 12)
    (tmp_path / "reference" / "settings").mkdir(parents=True)
    (tmp_path / "reference" / "settings" / "index.html").write_text(page, encoding="utf-8")
    (tmp_path / "index.html").write_text("<!doctype html><p>no diagram", encoding="utf-8")
    problems = tool.check(tmp_path, None, BROWSER)
    assert any("'RAGAS_TRACE_EXPORTER'" in p and "break across lines" in p for p in problems)
    assert any("/reference/settings/: code block starting 'your chain" in p for p in problems)
    assert "/: nothing to check (code_blocks: 0)" in problems
