# Telltale: `make run` runs the demo (serves on SQLite at 127.0.0.1:8000); `make test` runs the whole suite;
# `make test-fast` runs pytest without the tests marked slow or browser (the inner loop).
# All create .venv and install everything on first use (torch comes from the local wheels).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast instr-venvs lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/telltale demo --port 8000

# One venv per real instrumentation library (tests/instrumentations/envs.py), built before
# pytest and reused while its requirements are unchanged; a failed install stops here.
instr-venvs: $(STAMP)
	$(BIN)/python -m tests.instrumentations.envs

test: $(STAMP) instr-venvs
	bash scripts/test.sh

test-fast: $(STAMP)
	bash scripts/test.sh --fast

lint: $(STAMP)
	$(BIN)/ruff check app detectors pipelines bench tests
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
