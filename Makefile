# Two commands matter: `make run` and `make test`. Both set everything up first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test check bench soak fmt clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11+ is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/chatui $(ARGS)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

check: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/store_bench.py $(ARGS)

soak: $(STAMP)
	$(BIN)/python bench/soak_bench.py $(ARGS)

fmt: $(STAMP)
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) build *.egg-info
