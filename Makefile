# The README's two commands: `make run` (the main job) and `make test` (the whole suite).
# Both create or reuse a local virtual environment and install the package into it.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench results docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,docs,flax,equinox,mnist1d,rl,gymnasium,popgym,mujoco,nir,interop,shd,tensorboard,wandb,video]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m rtrl.cli demo

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check src tests

bench: $(STAMP)
	$(PY) -m rtrl.cli bench --out runs/bench --markdown docs/performance.md

results: $(STAMP)
	$(PY) -m rtrl.cli results training

# The documentation site with the API reference, into build/site; any warning (a broken link, a docstring
# reference that does not resolve) fails it.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict
