"""``rtrl.load(run_dir)``: a trained run from its folder, of any kind (a training run's cell; an RL run's torso, and
its policy), with the run's configuration, read from its ``config.json`` and its checkpoint; ``Trained.evaluate``
scores it on fresh episodes (``rtrl eval``), ``Trained.act`` acts with an RL run's policy.

A run folder is untrusted input: its ``config.json`` may name a cell by import path, and ``load`` imports only
what ``rtrl resume`` would (a cell of rtrl, Flax or Equinox, or one allowed with ``allow_import`` or the
``RTRL_ALLOW_IMPORT`` environment variable: ``rtrl.cells.lookup``). Nothing in the folder is written or locked.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jax
import numpy as np

from rtrl.cells.lookup import allowed_imports
from rtrl.config import Config
from rtrl.run import checkpoint
from rtrl.run.folder import CHECKPOINT, Run, RunError, check_finite
from rtrl.run.usage import UsageError


@dataclasses.dataclass(frozen=True, repr=False)
class Trained:
    """What ``load`` returns: ``cell`` (the cell object), ``params`` (the cell's parameters, as ``cell.init`` makes
    them), ``config`` (the run's resolved configuration), ``step`` (where the checkpoint stands) and
    ``model_params`` (everything the checkpoint trained: the cell's with the readout, or with the policy and value
    heads). It unpacks as ``cell, params = rtrl.load(path)``. ``seed``: the seed of the run these parameters are
    (of a run of several seeds, ``rtrl rl --seeds``, the one chosen); ``run`` and ``state``: the run folder and its
    whole checkpointed state (of that seed), what ``evaluate`` and ``act`` use. ``print`` shows one line, no
    weights."""

    cell: Any
    params: Any
    config: Config
    step: int
    model_params: Any
    run: Run | None = dataclasses.field(default=None, compare=False)
    state: Any = dataclasses.field(default=None, compare=False)
    seed: int | None = None

    def __iter__(self):
        return iter((self.cell, self.params))

    def __repr__(self) -> str:
        kind = getattr(self.run, "name", "")
        where = f" {str(self.run.path)!r}" if self.run is not None else ""
        sizes = f"{getattr(self.cell, 'input_size', '?')} -> {getattr(self.cell, 'hidden_size', '?')}"
        count = sum(math.prod(getattr(a, "shape", ())) for a in jax.tree.leaves(self.model_params))
        part = "torso" if kind == "rl" else "cell"
        seeds = getattr(self.config, "seeds", 1)
        seed = (f"; seed {self.seed} of {self.config.seed}..{self.config.seed + seeds - 1}" if seeds > 1 else
                f"; seed {self.seed}" if self.seed is not None else "")
        return (f"Trained({kind} run{where} at step {self.step}: {type(self.cell).__name__} {part} {sizes}, "
                f"{count:,} parameters in all{seed})")

    __str__ = __repr__

    def _needs_run(self, what: str) -> Run:
        if self.run is None or self.state is None:
            raise ValueError(f"{what} needs the run folder: use rtrl.load(path)")
        return self.run

    def evaluate(self, episodes: int | None = None, seed: int | None = None, greedy: bool = False,
                 video: str | os.PathLike | None = None, overwrite: bool = False) -> dict:
        """The run scored on fresh episodes, the same numbers as ``rtrl eval --json``: a dict with ``metric`` (its
        name), ``value``, ``episodes``, ``seed`` (the episodes'), ``step`` (the checkpoint's) and ``run_seed`` (the
        seed of the run scored: of a run of several seeds, the one loaded), and what the kind adds.

        A training run: its task's held-out metric (``metric`` is the task's metric name), made as the trainer makes
        its evaluations (its readout included), on ``episodes`` episodes drawn from ``seed`` (default: the run's own
        ``eval_size`` and ``seed``, its held-out episodes: then ``value`` equals the metric of the run's last
        record, and ``metrics`` the whole record's held-out figures). An RL run: the mean undiscounted return of
        ``episodes`` episodes (default 10) of its policy, ``greedy`` or sampled actions (``rtrl.run.rollout``),
        with ``std``, ``min``, ``max`` and ``cut`` (episodes cut short); ``video``: a folder for a video of each
        episode (a Gymnasium environment that renders; a video already there is replaced only with ``overwrite``,
        a link never written through). ``ValueError`` naming the argument that is wrong."""
        return self._needs_run("evaluate").evaluate(self.state, episodes, seed, greedy=greedy, video=video,
                                                    overwrite=overwrite) | {
            "step": self.step, "run_seed": self.seed}

    @functools.cached_property
    def _policy(self):
        run = self._needs_run("act")
        if not hasattr(run, "policy"):
            raise TypeError(f"act is for RL runs (rtrl rl); {run.path} is a {run.name} run: score it with evaluate(), "
                            "or step its cell with cell.step")
        return run.policy(self.state)

    def act(self, obs, memory=None, key: jax.Array | None = None, greedy: bool = False):
        """An RL run's policy in one environment: ``(action, memory')`` for the observation ``obs`` (as the
        environment gives it, a vector of the observation's size; normalised here as the run saw it) and the
        torso's state ``memory`` (``None``: an episode's start); ``key``: where the action is drawn from (default
        ``PRNGKey(0)``; unused with ``greedy``). Nothing is learned."""
        policy = self._policy
        x = policy.observe(checked_observation(obs, self.cell.input_size))
        if not isinstance(greedy, bool):
            raise TypeError(f"greedy must be True or False, got {greedy!r}")
        memory = policy.memory() if memory is None else memory
        key = jax.random.PRNGKey(0) if key is None else key
        if greedy not in self._steps:  # one compiled step per value of greedy
            self._steps[greedy] = jax.jit(lambda m, x, k: self._policy.act(m, x, k, greedy))
        return self._steps[greedy](memory, x, key)

    @functools.cached_property
    def _steps(self) -> dict:
        return {}


def checked_observation(obs, size: int) -> np.ndarray:
    """``obs`` as an array if it is one observation of ``size`` finite numbers, else a ``ValueError`` saying what it
    is (a batch, another width, a NaN: each would give an action without a word, or JAX's broadcasting error)."""
    try:
        x = np.asarray(obs)
        numbers = np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_
    except (TypeError, ValueError):
        numbers = False
    if not numbers:
        raise ValueError(f"obs must be one observation of {size} numbers, got {type(obs).__name__} {obs!r:.60}")
    if x.shape != (size,):
        raise ValueError(f"obs must be one observation of shape ({size},) (the torso's {size} inputs), got shape "
                         f"{tuple(x.shape)}")
    bad = np.flatnonzero(~np.isfinite(x.astype(np.float64)))
    if bad.size:
        raise ValueError(f"obs must be finite, got {x[bad[0]]} at index {bad[0]}; the policy acts on numbers")
    return x


def load(run_dir: str | os.PathLike, allow_import: Iterable[str] = (), seed: int | None = None) -> Trained:
    """The trained run in the run folder ``run_dir`` (``rtrl train`` or ``rtrl rl``), as of its last checkpoint;
    ``allow_import``: import paths of cells that the folder may name besides rtrl's, Flax's and Equinox's own (only
    for a folder you trust); ``seed``: of a run of several seeds (``rtrl rl --seeds S``, seeds ``SEED .. SEED + S -
    1``), which one (default: the first, ``SEED``; ``Trained.seed`` and its repr say which). A ``RunError`` naming
    the file when the folder holds no run, no checkpoint yet, or a damaged one; a ``TypeError`` for a ``run_dir``
    that is not a path; a ``ValueError`` for a seed the run does not have. An RL run in float64 turns on JAX's
    64-bit mode, as ``rtrl resume`` would (its parameters need it); the others change nothing."""
    if not isinstance(run_dir, str | os.PathLike):
        raise TypeError(f"run_dir must be a path to a run folder (str or os.PathLike), got {type(run_dir).__name__}")
    if isinstance(allow_import, str) or not all(isinstance(p, str) for p in allow_import):
        raise TypeError("allow_import must be a list of import paths module.path:Name, got "
                        f"{allow_import!r}")
    path = Path(run_dir)
    with allowed_imports(allow_import):
        run = Run.open(path, devices=1)  # whatever devices it trained on: the parameters are whole host arrays
    run.one_seed(None, seed)  # a seed it does not have: refused before the checkpoint is read
    file = path / CHECKPOINT
    if not file.is_file():
        raise RunError(f"{path} holds no trained parameters yet (no {CHECKPOINT}: the run has not reached its first "
                       "record)")
    state, meta = checkpoint.load(file, run.fresh())
    check_finite(file, state, "loaded")  # a NaN policy scores as a policy; its figures are no result
    state, seed = run.one_seed(state, seed)
    cell, params = run.trained(state.params)
    return Trained(cell, params, run.config, meta.get("step", int(state.step)), state.params, run, state, seed)


__all__ = ["Trained", "load"]


def load_run_seed(run_dir: str | os.PathLike, allow_import: Iterable[str] = (), seed: int | None = None) -> Trained:
    """``load`` for a command taking ``--run-seed``: a seed the run does not hold is a ``UsageError`` naming the
    option; a damaged folder stays a ``RunError`` or ``CheckpointError`` naming the file."""
    try:
        return load(run_dir, allow_import=allow_import, seed=seed)
    except ValueError as e:
        if type(e) is not ValueError:  # RunError, CheckpointError: the file, as the command's main says it
            raise
        raise UsageError(f"--run-seed: {e}") from None
