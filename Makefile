# The README's two commands: `make plan` and `make test`. Each creates the virtualenv on first use from the
# lock file (uv.lock), so a fresh machine needs only Python 3.11 and the package index.
PYTHON ?= python3
VENV := .venv
UV_VERSION := 0.13.8
STACK ?= dev
ARGS ?=

.PHONY: plan test lint schema bench clean

$(VENV)/.synced: pyproject.toml uv.lock
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	UV_PROJECT_ENVIRONMENT=$(VENV) $(VENV)/bin/uv sync --frozen --inexact --quiet
	touch $@

plan: $(VENV)/.synced ## The offline plan of a stack (STACK=dev by default; ARGS="--format markdown" ...)
	$(VENV)/bin/python -m trainstack plan --stack $(STACK) $(ARGS)

test: $(VENV)/.synced ## Lint, then the whole test suite
	$(VENV)/bin/ruff check .
	$(VENV)/bin/python -m pytest -n 2

lint: $(VENV)/.synced
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

schema: $(VENV)/.synced ## Regenerate stacks/cluster.schema.json for editors
	$(VENV)/bin/python -m trainstack schema --output stacks/cluster.schema.json

bench: $(VENV)/.synced
	$(VENV)/bin/python bench/plan_scaling.py

clean:
	rm -rf $(VENV)
