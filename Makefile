# Every target installs the project into .venv from pyproject.toml when it is missing or stale.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PY_DIRS := engine protocol server client cli tests bench

.PHONY: run test lint typecheck unit fuzz chaos browser web-vendor web-check screenshots bench bench-load bench-web demo clean

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

test: lint typecheck web-check browser unit

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

# The browser tests (tests/web/) drive Debian's Chromium through Playwright; Playwright's
# own browser download is never used. Installed here when missing and we can (root with
# apt-get: about a minute); otherwise one sentence says what to install, and make stops.
CHROMIUM ?= /usr/bin/chromium
export FOURSQUARE_CHROMIUM := $(CHROMIUM)
browser:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "Installing Debian's chromium for the browser tests (about a minute)..."; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null \
	      || { echo "error: apt-get could not install chromium, which the browser tests need." >&2; exit 1; }; \
	  else \
	    echo "error: the browser tests need Chromium at $(CHROMIUM): install Debian's chromium package (sudo apt-get install chromium), or give its path with CHROMIUM=/path/to/chromium." >&2; \
	    exit 1; \
	  fi; \
	fi

# The README's pictures of the web client: the browser tests take them, into docs/images/.
screenshots: $(STAMP) browser
	FOURSQUARE_SCREENSHOTS=1 $(BIN)/pytest tests/web -q

# The web client's one library, @msgpack/msgpack, bundled into web/public/vendor/msgpack.mjs
# (committed, so `make run` needs neither node nor npm). `make web-vendor` builds it again
# from the versions web/package-lock.json pins; `make web-check` (part of `make test`)
# builds it into a temporary folder and compares it with the committed file, byte for byte.
WEB_MODULES := web/node_modules/.installed
$(WEB_MODULES): web/package-lock.json
	cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

web-vendor: $(WEB_MODULES)
	cd web && node build-vendor.mjs

web-check:
	@if command -v npm >/dev/null && command -v node >/dev/null; then \
	  $(MAKE) --no-print-directory $(WEB_MODULES) && \
	  out=$$(mktemp -d) && (cd web && node build-vendor.mjs "$$out") && \
	  cmp web/public/vendor/msgpack.mjs "$$out/msgpack.mjs" && \
	  cmp web/public/vendor/msgpack.LICENSE.txt "$$out/msgpack.LICENSE.txt" && \
	  rm -r "$$out" && echo "web/public/vendor/msgpack.mjs is what web/package-lock.json builds"; \
	else \
	  echo "note: node and npm are not installed, so the committed web/public/vendor/msgpack.mjs was not rebuilt and compared (install nodejs and npm to check it)."; \
	fi

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

# The web client's figures (about 2 minutes): the first screen, the scripts' weight, and a
# race of 1,000 bots watched in Chromium beside a terminal-style spectator.
bench-web: $(BENCH_STAMP) browser
	$(BIN)/python -m bench.web --racers 1000 --duration 30 --write

# A local server on a free port, three bots and you, in one quick race.
demo: $(STAMP)
	$(BIN)/python -m client.demo

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
