"""``rtrl.load(run_dir)``: the trained cell and its parameters from a run folder of any kind (a training run's
cell; an RL run's torso), with the run's configuration, read from its ``config.json`` and its checkpoint.

A run folder is untrusted input: its ``config.json`` may name a cell by import path, and ``load`` imports only
what ``rtrl resume`` would (a cell of rtrl, Flax or Equinox, or one allowed with ``allow_import`` or the
``RTRL_ALLOW_IMPORT`` environment variable: ``rtrl.cells.lookup``). Nothing in the folder is written or locked.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rtrl.cells.lookup import allowed_imports
from rtrl.config import Config
from rtrl.run import checkpoint
from rtrl.run.folder import CHECKPOINT, Run, RunError


@dataclasses.dataclass(frozen=True)
class Trained:
    """What ``load`` returns: ``cell`` (the cell object), ``params`` (the cell's parameters, as ``cell.init`` makes
    them), ``config`` (the run's resolved configuration), ``step`` (where the checkpoint stands) and
    ``model_params`` (everything the checkpoint trained: the cell's with the readout, or with the policy and value
    heads). It unpacks as ``cell, params = rtrl.load(path)``."""

    cell: Any
    params: Any
    config: Config
    step: int
    model_params: Any

    def __iter__(self):
        return iter((self.cell, self.params))


def load(run_dir: str | os.PathLike, allow_import: Iterable[str] = ()) -> Trained:
    """The trained cell and its parameters in the run folder ``run_dir`` (``rtrl train`` or ``rtrl rl``), as of its
    last checkpoint; ``allow_import``: import paths of cells that the folder may name besides rtrl's, Flax's and
    Equinox's own (only for a folder you trust). A ``RunError`` naming the file when the folder holds no run, no
    checkpoint yet, or a damaged one; a ``TypeError`` for a ``run_dir`` that is not a path. An RL run in float64
    turns on JAX's 64-bit mode, as ``rtrl resume`` would (its parameters need it); the others change nothing."""
    if not isinstance(run_dir, str | os.PathLike):
        raise TypeError(f"run_dir must be a path to a run folder (str or os.PathLike), got {type(run_dir).__name__}")
    if isinstance(allow_import, str) or not all(isinstance(p, str) for p in allow_import):
        raise TypeError("allow_import must be a list of import paths module.path:Name, got "
                        f"{allow_import!r}")
    path = Path(run_dir)
    with allowed_imports(allow_import):
        run = Run.open(path, devices=1)  # whatever devices it trained on: the parameters are whole host arrays
    file = path / CHECKPOINT
    if not file.is_file():
        raise RunError(f"{path} holds no trained parameters yet (no {CHECKPOINT}: the run has not reached its first "
                       "record)")
    state, meta = checkpoint.load(file, run.fresh())
    cell, params = run.trained(state.params)
    return Trained(cell, params, run.config, meta.get("step", int(state.step)), state.params)


__all__ = ["Trained", "load"]
