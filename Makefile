# Every target installs the project into .venv from pyproject.toml when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PY_DIRS := engine protocol server client cli tests bench

.PHONY: run test lint typecheck unit fuzz chaos bench bench-load demo clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

# The benchmarks also want the bench extra (uvloop for the load runs, py-spy for profiles).
BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,dev,bench]'
	touch $(BENCH_STAMP)

# The fuzzers also want the fuzz extra (atheris, for the decoders).
FUZZ_STAMP := $(VENV)/.installed-fuzz
$(FUZZ_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,dev,fuzz]'
	touch $(FUZZ_STAMP)

# Load runs: target and generator at nice -10 (root only; otherwise a note, normal
# priority), all three processes on uvloop. LOAD_FLAGS='--loop asyncio' for the default loop.
LOAD_FLAGS ?= --priority -10 --loop uvloop

run: $(STAMP)
	$(BIN)/foursquare serve

test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check $(PY_DIRS)

typecheck: $(STAMP)
	$(BIN)/mypy --strict $(PY_DIRS)

unit: $(STAMP)
	$(BIN)/pytest

# An hour of fuzzing (FUZZ_MINUTES=60): the decoders under atheris for a quarter of it, then
# the message handlers of one real server under hypothesis (tests/fuzz.py).
FUZZ_MINUTES ?= 60
fuzz: $(FUZZ_STAMP)
	$(BIN)/python -m tests.fuzz --minutes $(FUZZ_MINUTES)

# The chaos test at length (tests/server/test_chaos.py): CHAOS_KILLS SIGKILLs of a real
# server during bursts of moves (make test runs 4).
CHAOS_KILLS ?= 40
chaos: $(STAMP)
	$(BIN)/pytest tests/server/test_chaos.py -q -s --chaos-kills $(CHAOS_KILLS)

# Everything in under ten minutes (about six on 2 cores): the engine, bounded samples of
# the solver and the bots (about 2 minutes), and the five load goals at 20 s a run (about
# 4 minutes: the floor is run twice around the server), which it writes into
# docs/performance.md. The full-length load runs are `make bench-load`.
bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.engine --write
	$(BIN)/python -m bench.solver --seeds 100 --budget 2
	$(BIN)/python -m bench.bots --games 300 --strong-games 100
	$(BIN)/python -m bench.load $(LOAD_FLAGS) --goals --duration 20 --write

# The full-length load runs (about 7 minutes): server, server on a RAM disk and the echo
# floor at 1,000 racers, then the five goals at 30 s a run.
bench-load: $(BENCH_STAMP)
	$(BIN)/python -m bench.load $(LOAD_FLAGS) --write
	$(BIN)/python -m bench.load $(LOAD_FLAGS) --goals --write

# A local server on a free port, three bots and you, in one quick race.
demo: $(STAMP)
	$(BIN)/python -m client.demo

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
