"""A run folder: one training run that can be started, stopped, resumed and compared.

Files in ``runs/NAME/``:

* ``config.json``: everything that defines the run (task, cell, method and their options, sizes, optimiser,
  budget, seed); ``build`` turns it back into a ``Trainer``;
* ``metrics.jsonl``: one JSON object per evaluation: ``step``, ``loss`` (training loss since the previous
  evaluation, ``null`` at step 0), ``metric`` (the task's held-out headline metric), ``eval_loss``, any other
  metric of the task, and ``wall_s`` (seconds of training so far, across resumptions);
* ``checkpoint.npz``: the whole ``TrainState`` at the last evaluation (parameters, optimiser state, carries,
  traces, data key, stream position), written atomically;
* ``curve.png``: the learning curves (training loss and metric, chance dashed).

A stopped run resumes from its checkpoint and replays exactly what the uninterrupted run would have done: the
data is a pure function of the data key and the step, and everything else is in the checkpoint.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
from pathlib import Path

from rtrl import methods
from rtrl.cells import CELLS
from rtrl.files import atomic_write_text
from rtrl.reports.plot import Curve, plot_curves
from rtrl.training import checkpoint
from rtrl.training.tasks import TASKS
from rtrl.training.trainer import Diverged, Trainer, TrainState, fit, make_optimizer

CONFIG, METRICS, CHECKPOINT, CURVE = "config.json", "metrics.jsonl", "checkpoint.npz", "curve.png"
BUDGET_KEYS = ("steps",)  # may change between a run and its resumption


def default_config() -> dict:
    return {
        "task": "copy",
        "task_args": {},
        "cell": "elman",
        "cell_args": {},
        "hidden": 32,
        "method": "rtrl",
        "method_args": {},
        "batch": 16,
        "update_every": None,  # None: 1 for a trace method, the episode length for a sequence method
        "optimizer": "adam",
        "lr": 1e-3,
        "clip": 1.0,
        "steps": 10000,
        "eval_every": None,  # None: about 25 evaluations per run
        "eval_size": 256,
        "stagger": False,
        "seed": 0,
    }


def option_names(cls, exclude=()) -> dict[str, object]:
    """Keyword options of a constructor and their defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(cls).parameters.items()
        if name not in exclude and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def make(kind: str, registry: dict, name: str, args: dict, exclude=()):
    """The class ``registry[name]``, with ``args`` checked against its options."""
    if name not in registry:
        raise ValueError(f"unknown {kind} {name!r}; expected one of {sorted(registry)}")
    cls = registry[name]
    unknown = set(args) - set(option_names(cls, exclude))
    if unknown:
        raise ValueError(
            f"{kind} {name!r} has no option {sorted(unknown)}; its options are {sorted(option_names(cls, exclude))}"
        )
    return cls


def method_object(name: str, args: dict):
    """The method ``name`` with options ``args`` (registry entries may be classes or ``functools.partial``)."""
    return make("method", methods.REGISTRY, name, args)(**args)


def make_method(name: str, args: dict, cell):
    return methods.resolve(method_object(name, args), cell)


def complete(config: dict) -> dict:
    """``config`` with defaults filled in and checked; raises ``ValueError`` naming what is wrong."""
    full = default_config()
    unknown = set(config) - set(full)
    if unknown:
        raise ValueError(f"unknown config keys {sorted(unknown)}")
    full.update(config)
    for name in ("hidden", "batch", "steps", "eval_size"):
        value = full[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    task = make("task", TASKS, full["task"], full["task_args"])(**full["task_args"])
    online = method_object(full["method"], full["method_args"]).online
    if full["update_every"] is None:
        full["update_every"] = 1 if online else task.length
    k = full["update_every"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"update_every must be a positive integer, got {k!r}")
    if full["eval_every"] is None:
        full["eval_every"] = k * max(1, round(full["steps"] / 25 / k))
    if isinstance(full["eval_every"], bool) or not isinstance(full["eval_every"], int) or full["eval_every"] < 1:
        raise ValueError(f"eval_every must be a positive integer, got {full['eval_every']!r}")
    for name in ("steps", "eval_every"):  # whole updates only
        full[name] = -(-full[name] // k) * k
    return full


def build(config: dict) -> Trainer:
    """The trainer a complete config describes; raises ``ValueError`` on bad options. A trainer is immutable,
    so runs that differ only in budget share one (and its compiled functions)."""
    key = json.dumps({k: v for k, v in config.items() if k not in ("steps", "eval_every")}, sort_keys=True)
    return cached_trainer(key)


@functools.lru_cache(maxsize=8)
def cached_trainer(key: str) -> Trainer:
    config = json.loads(key)
    task = make("task", TASKS, config["task"], config["task_args"])(**config["task_args"])
    cell_cls = make("cell", CELLS, config["cell"], config["cell_args"], exclude=("input_size", "hidden_size"))
    cell = cell_cls(task.input_size, config["hidden"], **config["cell_args"])
    method = make_method(config["method"], config["method_args"], cell)
    return Trainer(
        task,
        cell,
        method,
        batch=config["batch"],
        update_every=config["update_every"],
        optimizer=make_optimizer(config["optimizer"], config["lr"], config["clip"]),
        eval_size=config["eval_size"],
        stagger=config["stagger"],
        seed=config["seed"],
    )


def same_run(a: dict, b: dict) -> bool:
    def strip(c):
        return {k: v for k, v in c.items() if k not in BUDGET_KEYS}

    return strip(a) == strip(b)


def read_config(path: str | os.PathLike) -> dict:
    file = Path(path) / CONFIG
    if not file.is_file():
        raise ValueError(f"{path} holds no run (no {CONFIG})")
    return json.loads(file.read_text())


def read_metrics(path: str | os.PathLike) -> list[dict]:
    file = Path(path) / METRICS
    if not file.is_file():
        return []
    return [json.loads(line) for line in file.read_text().splitlines() if line.strip()]


def label(config: dict) -> str:
    return f"{config['cell']} {config['method']} k={config['update_every']}"


class Run:
    """A run folder and its trainer: ``Run.create(path, config)`` or ``Run.open(path)``, then ``train()``."""

    def __init__(self, path: str | os.PathLike, config: dict, trainer: Trainer | None = None):
        self.path = Path(path)
        self.config = config
        self.trainer = trainer if trainer is not None else build(config)

    @classmethod
    def create(cls, path: str | os.PathLike, config: dict, overwrite: bool = False) -> Run:
        """A new run in ``path``; if it already holds the same run (budget aside), that run, to be continued.
        A different run there is an error unless ``overwrite``, which removes the run's files first."""
        config = complete(config)
        trainer = build(config)  # every option checked before anything is written
        path = Path(path)
        if (path / CONFIG).is_file():
            if overwrite:
                for name in (CONFIG, METRICS, CHECKPOINT, CURVE):
                    (path / name).unlink(missing_ok=True)
            else:
                existing = read_config(path)
                if not same_run(existing, config):
                    diff = sorted(k for k in config if existing.get(k) != config[k] and k not in BUDGET_KEYS)
                    raise ValueError(
                        f"{path} holds a different run (differs in {', '.join(diff)}); "
                        "choose another --out, or continue that run with `rtrl resume`"
                    )
        elif path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise ValueError(f"{path} exists and is not a run folder; choose another --out")
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path / CONFIG, json.dumps(config, indent=2) + "\n")
        return cls(path, config, trainer)

    @classmethod
    def open(cls, path: str | os.PathLike, steps: int | None = None) -> Run:
        """An existing run, with its step budget changed to ``steps`` if given."""
        config = read_config(path)
        if steps is not None:
            config = complete({**config, "steps": steps})
        run = cls(path, config)
        if steps is not None:
            atomic_write_text(Path(path) / CONFIG, json.dumps(config, indent=2) + "\n")
        return run

    # -- state on disk ----------------------------------------------------------------------------------
    def load(self) -> tuple[TrainState, float]:
        """The checkpointed state and wall time; a fresh state if there is no checkpoint yet. Metrics past
        the checkpoint (written before a crash) are dropped, as the resumed run will write them again."""
        state = self.trainer.init()
        file = self.path / CHECKPOINT
        if not file.is_file():
            self.rewrite_metrics([])
            return state, 0.0
        state, meta = checkpoint.load(file, state)
        self.rewrite_metrics([r for r in read_metrics(self.path) if r["step"] <= meta["step"]])
        return state, meta["wall_s"]

    def rewrite_metrics(self, records: list[dict]) -> None:
        atomic_write_text(self.path / METRICS, "".join(json.dumps(r) + "\n" for r in records))

    def record(self, state: TrainState, record: dict) -> None:
        """After an evaluation: append the metrics line, then checkpoint (so a checkpoint never runs ahead of
        the metrics it comes with)."""
        with open(self.path / METRICS, "a") as f:
            f.write(json.dumps(record) + "\n")
        checkpoint.save(self.path / CHECKPOINT, state, {"step": record["step"], "wall_s": record["wall_s"]})

    def plot(self) -> Path:
        task = self.trainer.task
        curve = Curve(label(self.config), read_metrics(self.path), task.metric_name, task.chance)
        title = f"{task.name}: {label(self.config)}, hidden {self.config['hidden']}, batch {self.config['batch']}"
        plot_curves([curve], self.path / CURVE, title)
        return self.path / CURVE

    # -- training ---------------------------------------------------------------------------------------
    def train(self, on_eval=None, on_chunk=None) -> TrainState:
        """Continue from the checkpoint up to ``config["steps"]``; writes metrics, checkpoints and the plot.
        On ``Diverged`` the last good checkpoint stays, and the plot shows the run up to it."""
        state, wall_s = self.load()

        def record(state, rec):
            self.record(state, rec)
            if on_eval is not None:
                on_eval(state, rec)

        try:
            state = fit(
                self.trainer,
                state,
                self.config["steps"],
                self.config["eval_every"],
                on_eval=record,
                on_chunk=on_chunk,
                wall_s=wall_s,
            )
        finally:
            if read_metrics(self.path):
                self.plot()
        return state

    def last_checkpoint_step(self) -> int | None:
        file = self.path / CHECKPOINT
        return checkpoint.read_meta(file)["step"] if file.is_file() else None


__all__ = ["Diverged", "Run", "build", "complete", "default_config", "read_config", "read_metrics"]
