# The two set-up commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv and install Headwater with its dev tools on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-fast lint typecheck pytest docs bench mutants clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m headwater.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/python tools/typecheck.py

# the whole suite in two runs: the fast tier first over both cores (a broken rule fails in minutes), then the tests
# that need services (a broker, databases, Spark, a JVM, fresh venvs, podman, killed workers) in three workers on
# the two cores (SERVICE_WORKERS: 26.6 min against 27.6 with two, the cores idle 10% of the run, so more would not
# help), handed out one at a time with the scenarios of minutes first; pytest-xdist's workers share one of each
# service per run (harness/shared_services.py); each run prints its slowest tests
SERVICE_WORKERS ?= 3
pytest: $(STAMP)
	HEADWATER_FAST_TIER=1 $(BIN)/python -m pytest -m "not services" -n 2 --durations=10
	$(BIN)/python -m pytest -m services -n $(SERVICE_WORKERS) --dist load --maxschedchunk 1 --durations=30

# the inner loop: everything that needs no service (tests/support/tiers.py), over both cores; a test that reaches
# a service unmarked fails here
test-fast: $(STAMP)
	HEADWATER_FAST_TIER=1 $(BIN)/python -m pytest -m "not services" -n 2 --durations=10

docs: $(STAMP)
	$(BIN)/python tools/gen_docs.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: lint typecheck docs pytest

# not part of `make test` (about 15 minutes on 2 cores): every bench of bench/ with the settings of bench/run_all.py,
# one table of ratios against their goals (docs/performance.md); `make bench BENCH_ARGS=--write-docs` adds the table
# to that page, `BENCH_ARGS="--only core_loops,transforms"` runs some
BENCH_ARGS ?=
bench: $(STAMP)
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

# not part of `make test` (about half an hour on 2 cores): the conformance suite and the connectors' own tests
# against generated mutants of the JDBC-CDC source's and the Spark sink's offset and commit code (tools/mutants.py,
# docs/testing.md). Cosmic Ray runs from a venv of its own, so `headwater[dev]` does not carry it
MUTANTS_VENV := .venv-mutants
$(MUTANTS_VENV)/.installed:
	$(PYTHON) -m venv $(MUTANTS_VENV)
	$(MUTANTS_VENV)/bin/python -m pip install --quiet cosmic-ray==8.7.0
	touch $@

mutants: $(STAMP) $(MUTANTS_VENV)/.installed
	$(MUTANTS_VENV)/bin/python tools/mutants.py

clean:
	rm -rf $(VENV) $(MUTANTS_VENV) .mutants .mypy_cache .ruff_cache .pytest_cache .typecheck .site
