# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment in .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench lock clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# A real assessment: the built-in oracle white agent on loopback, the scripted user, SQLite.
demo: $(BIN)/.installed
	$(BIN)/green-agent demo

# Lint, format check, type check, then the whole suite (SQLite and the local PostgreSQL).
test: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

# What the service costs (docs/benchmarks.md); `make bench` is the quick sizes, ~2 minutes.
bench: $(BIN)/.installed
	$(BIN)/python -m bench.run_all --quick

# The image installs from requirements.lock: every transitive dependency pinned with its hashes. Regenerate it
# after changing the dependencies in pyproject.toml.
lock: $(BIN)/.installed
	$(BIN)/pip-compile --quiet --strip-extras --generate-hashes --no-emit-index-url --no-emit-find-links \
		-o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
