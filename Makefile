# The README's two commands: `make run` (the demo) and `make test` (the whole suite).
# Each creates or reuses a local virtual environment and installs into it what it needs, no more: `make run` the
# core (JAX, optax: all the demo imports), `make test` the test extras (torch, MuJoCo, ... for the suite's
# interoperability, environment and logging tests), `make docs` the documentation's. One stamp file per set, so
# `make test` after `make run` adds only what is missing, and an edit of pyproject.toml reinstalls.
# torch (the `interop` extra, for `make test` only) resolves to a CPU build where the index offers one: pip takes
# 2.13.0+cpu over 2.13.0 (see pyproject.toml); elsewhere run `PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TEST_EXTRAS := dev,flax,equinox,mnist1d,rl,gymnasium,popgym,mujoco,nir,interop,shd,tensorboard,wandb,video

.PHONY: run test lint bench results docs docs-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed-core: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[$(TEST_EXTRAS)]"
	touch $@ $(VENV)/.installed-core $(VENV)/.installed-dev

$(VENV)/.installed-docs: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e ".[docs]"
	touch $@ $(VENV)/.installed-core

run: $(VENV)/.installed-core
	$(PY) -m rtrl.cli demo

test: $(VENV)/.installed-test
	$(PY) -m pytest

lint: $(VENV)/.installed-dev
	$(PY) -m ruff check src tests tools

bench: $(VENV)/.installed-core
	$(PY) -m rtrl.cli bench --out runs/bench --markdown docs/performance.md

results: $(VENV)/.installed-test
	$(PY) -m rtrl.cli results training

# The documentation site with the API reference, into build/site; any warning (a broken link, a docstring
# reference that does not resolve) fails it, and so does docs-check (tools/check_docs.py: a machine path, an issue
# number or a dead relative link in the pages).
docs: $(VENV)/.installed-docs docs-check
	$(PY) -m mkdocs build --strict

docs-check: $(VENV)/.installed-core
	$(PY) tools/check_docs.py
