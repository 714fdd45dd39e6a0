# Two commands matter: `make run` and `make test`. Both set everything up first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
APP_STAMP := $(VENV)/.installed-app
STAMP := $(VENV)/.installed

.PHONY: run test check bench soak fmt clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || \
		{ echo "Python 3.11+ is needed (set PYTHON=/path/to/python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# `run` installs what the app needs; `test` adds the test tools on top.
# compat editable mode puts the checkout on sys.path (no import hook: faster start-up);
# compileall writes the bytecode even where PYTHONDONTWRITEBYTECODE is set.
COMPILE := $(BIN)/python -m compileall -q chatui store widgets themes >/dev/null

$(APP_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e . --config-settings editable_mode=compat
	$(COMPILE)
	@touch $(APP_STAMP)

# One pip run for the tests' set (the app's and the test tools), not the app's and then
# the tests' again: a fresh clone's `make test` stays in its ten minutes on 2 cores.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	$(COMPILE)
	@touch $(APP_STAMP) $(STAMP)

run: $(APP_STAMP)
	$(BIN)/chatui $(ARGS)

# Tests run on four workers, each test alone in its own process's event loop; many
# tests wait on a terminal, a server or a subprocess, so four keep two cores busy
# (a whole run on a loaded shared machine: 13.8 min on two workers, 10.2 on four; on
# a quiet one, 5.5-6 min on four). TEST_WORKERS=0 runs them in
# one process. A worker that is done takes tests from another's queue (worksteal):
# the slow tmux and fuzz tests do not leave a core idle at the end of the run.
TEST_WORKERS ?= 4

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal --durations=20

check: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

# The first prints issue 23's table (chatui against the raw engines, SQLite and
# PostgreSQL, with the load); TABLE_ARGS="--messages 1000000" for 1M.
bench: $(STAMP)
	$(BIN)/python bench/engine_table.py $(TABLE_ARGS)
	$(BIN)/python bench/store_bench.py $(ARGS)
	$(BIN)/python bench/pg_bench.py $(PG_ARGS)
	$(BIN)/python bench/search_bench.py $(SEARCH_ARGS)
	$(BIN)/python bench/app_bench.py
	$(BIN)/python bench/tree_bench.py
	$(BIN)/python bench/live_bench.py
	$(BIN)/python bench/branch_memory_bench.py

soak: $(STAMP)
	$(BIN)/python bench/soak_bench.py $(ARGS)

fmt: $(STAMP)
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info
