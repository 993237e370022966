# Every target installs the project into .venv from pyproject.toml when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PY_DIRS := engine protocol server client cli tests bench

.PHONY: run test lint typecheck unit bench bench-load demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/foursquare serve

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check $(PY_DIRS)

typecheck: $(STAMP)
	$(BIN)/mypy --strict $(PY_DIRS)

unit: $(STAMP)
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python -m bench.engine --write
	# Bounded samples (about 4 minutes); docs/performance.md records the full-size runs.
	$(BIN)/python -m bench.solver --seeds 100 --budget 2
	$(BIN)/python -m bench.bots --games 300 --strong-games 100

bench-load: $(STAMP)
	$(BIN)/python -m bench.load --write

# A local server on a free port, three bots and you, in one quick race.
demo: $(STAMP)
	$(BIN)/python -m client.demo

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
