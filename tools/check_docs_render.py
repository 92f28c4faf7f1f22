"""Renders pages of the built docs site in headless Chromium and checks what a reader
would see broken, which ``mkdocs build --strict`` cannot: a name in a table broken
mid-word ("RAGAS_TRACE_EXPOR" / "TER"), and a code block or a table wider than the
page (the home page's diagram, clipped behind a scroll bar), in a 1280-pixel window.
Also saves a screenshot of each page.

    python tools/check_docs_render.py site [--screenshots DIR] [--require-chromium]

The site is served on 127.0.0.1; each page is loaded in a same-origin iframe of a
small wrapper page whose script measures the rendered layout (client rectangles of
every ``code`` in a table, scroll widths of every code block and table) and writes the result
into its own DOM, which ``chromium --dump-dom`` prints. Exit 0: every page renders
as it should (or, without ``--require-chromium``, Chromium is not installed: said and
skipped); 1: the failures, one line each; 2: Chromium missing with
``--require-chromium``, or a page that could not be measured.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WIDTH, HEIGHT = 1280, 1600  # a laptop's browser window
TIMEOUT_S = 120
WRAPPER = "/__render_check__.html"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--hide-scrollbars")


@dataclass(frozen=True)
class Page:
    path: str  # under the site root
    needs: str  # what the page must contain, so that the check cannot pass on nothing


PAGES = (Page("", "code_blocks"), Page("reference/settings/", "table_names"))

_MEASURE = """<!doctype html><meta charset="utf-8"><body style="margin:0">
<iframe id="page" src="%(src)s" style="width:%(width)dpx;height:%(height)dpx;border:0"></iframe>
<pre id="result">not measured</pre>
<script>
document.getElementById("page").addEventListener("load", function () {
  var doc = this.contentDocument;
  var out = {table_names: 0, code_blocks: 0, tables: 0, broken_names: [],
             overflowing_blocks: [], overflowing_tables: []};
  doc.querySelectorAll(".md-content table code").forEach(function (code) {
    out.table_names += 1;
    // A name on one line has one client rectangle; broken, one per line.
    if (code.getClientRects().length > 1) out.broken_names.push(code.textContent);
  });
  doc.querySelectorAll(".md-content .md-typeset__scrollwrap").forEach(function (wrap) {
    out.tables += 1;
    if (wrap.scrollWidth > wrap.clientWidth + 1) {
      out.overflowing_tables.push({start: wrap.textContent.trim().slice(0, 40),
                                   width: wrap.scrollWidth, shown: wrap.clientWidth});
    }
  });
  doc.querySelectorAll(".md-content pre > code").forEach(function (code) {
    out.code_blocks += 1;
    if (code.scrollWidth > code.clientWidth + 1) {
      out.overflowing_blocks.push({start: code.textContent.trim().slice(0, 40),
                                   width: code.scrollWidth, shown: code.clientWidth});
    }
  });
  document.getElementById("result").textContent = JSON.stringify(out);
});
</script>"""
_RESULT = re.compile(r'<pre id="result">(.*?)</pre>', re.DOTALL)


class _Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith(WRAPPER + "?"):
            src = self.path.split("?", 1)[1]
            body = (_MEASURE % {"src": html.escape(src), "width": WIDTH,
                                "height": HEIGHT}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextlib.contextmanager
def serving(site: Path) -> Iterator[str]:
    handler = functools.partial(_Handler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(browser: str, *args: str) -> str:
    """One Chromium run with a fresh profile; its stdout."""
    with tempfile.TemporaryDirectory(prefix="docs-render-") as profile:
        done = subprocess.run(
            [browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
             f"--window-size={WIDTH},{HEIGHT}", *args],
            capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"chromium exited {done.returncode}: {done.stderr[-400:]}")
    return done.stdout


def measure(browser: str, base: str, page: Page) -> dict[str, Any]:
    dom = _run(browser, "--run-all-compositor-stages-before-draw",
               "--virtual-time-budget=10000", "--dump-dom", f"{base}{WRAPPER}?/{page.path}")
    found = _RESULT.search(dom)
    if found is None or found[1] == "not measured":
        raise RuntimeError(f"/{page.path}: the page did not load in Chromium")
    result: dict[str, Any] = json.loads(html.unescape(found[1]))
    return result


def failures(page: Page, result: dict[str, Any]) -> list[str]:
    where = f"/{page.path}"
    broken = result["broken_names"]
    problems = [f"{where}: {len(broken)} name(s) in tables break across lines: "
                + ", ".join(repr(n) for n in broken[:5]) + (", ..." if len(broken) > 5 else "")
                ] if broken else []
    problems += [f"{where}: code block starting {b['start']!r} is {b['width']} px wide, "
                 f"{b['shown']} px shown (clipped)" for b in result["overflowing_blocks"]]
    problems += [f"{where}: table starting {t['start']!r} is {t['width']} px wide, "
                 f"{t['shown']} px shown (scrolls sideways)" for t in result["overflowing_tables"]]
    if not result[page.needs]:
        problems.append(f"{where}: nothing to check ({page.needs}: 0)")
    return problems


def check(site: Path, screenshots: Path | None, browser: str,
          pages: tuple[Page, ...] = PAGES) -> list[str]:
    problems: list[str] = []
    with serving(site) as base:
        for page in pages:
            problems += failures(page, measure(browser, base, page))
            if screenshots is not None:
                screenshots.mkdir(parents=True, exist_ok=True)
                name = page.path.strip("/").replace("/", "-") or "home"
                _run(browser, f"--screenshot={screenshots / f'{name}.png'}",
                     f"{base}/{page.path}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("site", type=Path, help="the mkdocs build output")
    parser.add_argument("--screenshots", type=Path, help="save a PNG of each page here")
    parser.add_argument("--require-chromium", action="store_true",
                        help="fail (exit 2) when Chromium is not installed")
    args = parser.parse_args(argv)
    browser = chromium()
    if browser is None:
        print("docs render check skipped: no Chromium (apt-get install chromium)",
              file=sys.stderr)
        return 2 if args.require_chromium else 0
    try:
        problems = check(args.site, args.screenshots, browser)
    except (RuntimeError, subprocess.TimeoutExpired) as err:
        print(f"docs render check could not run: {err}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"docs render check: {', '.join('/' + p.path for p in PAGES)} render "
              "as they should")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
