# Telltale: `make run` runs the demo (serves on SQLite at 127.0.0.1:8000, or `make run PORT=8001`); `make test` runs the whole suite;
# `make test-fast` runs pytest without the tests marked slow or browser (the inner loop);
# `make docs` builds the docs site into site/.
# All create .venv on first use: `make run` installs the service alone, the others add the dev
# tools (pytest, ruff, mypy, playwright, schemathesis, mkdocs); torch comes from the local wheels.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
PORT ?= 8000
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test test-fast instr-venvs lint docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(RUN_STAMP)

# The dev extras include the service, so a venv made for the tests also runs the demo.
$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(DEV_STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/telltale demo --port $(PORT)

# One venv per real instrumentation library (tests/instrumentations/envs.py), built before
# pytest and reused while its requirements are unchanged; a failed install stops here.
instr-venvs: $(DEV_STAMP)
	$(BIN)/python -m tests.instrumentations.envs

test: $(DEV_STAMP) instr-venvs
	bash scripts/test.sh

test-fast: $(DEV_STAMP)
	bash scripts/test.sh --fast

lint: $(DEV_STAMP)
	$(BIN)/ruff check app detectors pipelines bench tests
	$(BIN)/mypy

docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
