"""The run configuration: one typed, validated object from which a trainer, ``config.json`` and the CLI derive.

``RunConfig`` lists every option of a training run once, each with its default, its help text and its check.
``rtrl train``'s options are built from its fields (``rtrl.cli.options``), ``config.json`` is its ``to_dict()``,
and ``rtrl resume`` reads it back with ``from_dict``, so there is no second spelling of the schema. Construction
validates everything (types, ranges, names and options of the task, cell and method, and that the method
applies to the cell), so an invalid configuration never exists; ``resolved()`` fills the defaults that depend
on the others (``update_every``, ``eval_every``) and rounds the budgets to whole updates.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from typing import Any

from rtrl import methods
from rtrl.cells import CELLS
from rtrl.cells.adapters import from_import_path
from rtrl.frozen import Frozen
from rtrl.training.tasks import TASKS
from rtrl.training.trainer import Trainer, make_optimizer

OPTIMIZERS = ("adam", "sgd")
RESUME_KEYS = ("steps", "devices")  # may change between a run and its resumption: the budget, where it runs
ADDED_KEYS = ("devices",)  # options newer than some run folders: a config.json without them takes the default
MAX_SEED = 2**32 - 1  # jax.random.PRNGKey takes a 32-bit seed without x64


class Invalid(ValueError):
    """A value that fails a check; the message is what was expected (``"a positive integer"``)."""


# -- checks: value -> value, or Invalid(what was expected) ------------------------------------------------------
def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value):
    if not is_int(value) or value < 1:
        raise Invalid("a positive integer")
    return value


def seed(value):
    if not is_int(value) or not 0 <= value <= MAX_SEED:
        raise Invalid(f"an integer from 0 to 2**32 - 1 = {MAX_SEED}")
    return value


def positive_float(value):
    if not (is_int(value) or isinstance(value, float)) or not (math.isfinite(value) and value > 0):
        raise Invalid("a positive finite number")
    return float(value)


def optional(check: Callable) -> Callable:
    def check_optional(value):
        try:
            return None if value is None else check(value)
        except Invalid as e:
            raise Invalid(f"{e} or null") from None

    return check_optional


def one_of(names) -> Callable:
    def check_name(value):
        if not isinstance(value, str) or value not in names:
            raise Invalid(f"one of {sorted(names)}")
        return value

    return check_name


def cell_name(value):
    """A registered cell's name, or the import path ``module.path:Name`` of any other (a Flax or Equinox cell,
    an rtrl cell class, or a factory of either: ``rtrl.cells.adapters.from_import_path``)."""
    if isinstance(value, str) and (value in CELLS or ":" in value):
        return value
    raise Invalid(f"one of {sorted(CELLS)} or an import path module.path:Name (e.g. flax.linen:GRUCell)")


def options(value):
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise Invalid("an object of options (KEY: VALUE)")
    return value


def pairs(value):
    """``options`` as a sorted tuple of ``(name, value)`` pairs, so that the configuration stays hashable (a dict,
    or the JSON lists of pairs that ``config.json`` holds, are accepted)."""
    try:
        items = dict(value).items() if not isinstance(value, str) else None
    except (TypeError, ValueError):
        items = None
    if items is None or not all(isinstance(k, str) for k, _ in items):
        raise Invalid("an object of options (KEY: VALUE)")
    return tuple(sorted(items))


def non_negative_int(value):
    if not is_int(value) or value < 0:
        raise Invalid("a non-negative integer")
    return value


def non_negative_float(value):
    if not (is_int(value) or isinstance(value, float)) or not (math.isfinite(value) and value >= 0):
        raise Invalid("a non-negative finite number")
    return float(value)


def unit_interval(value):
    if not (is_int(value) or isinstance(value, float)) or not 0 <= value <= 1:
        raise Invalid("a number in [0, 1]")
    return float(value)


def flag(value):
    if not isinstance(value, bool):
        raise Invalid("true or false")
    return value


def option(default, help: str, check: Callable, metavar: str | None = None):
    """A field of a configuration (``RunConfig``, ``rtrl.rl.RLConfig``): its default, help line (for ``--help`` and
    docs/cli.md) and check."""
    meta = {"help": help, "check": check, "metavar": metavar}
    if isinstance(default, dict):
        return dataclasses.field(default_factory=dict, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


class Options(Frozen):
    """A configuration whose fields are ``option()``s: construction runs every field's check (a ``ValueError``
    naming the field and what was expected); ``to_dict`` / ``from_dict`` are its ``config.json``. ``RunConfig``
    (``rtrl train``) and ``rtrl.rl.RLConfig`` (``rtrl rl``) are ones."""

    command = "rtrl train"  # what writes it, for messages

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            try:
                object.__setattr__(self, field.name, field.metadata["check"](value))
            except Invalid as e:
                raise ValueError(f"{field.name} must be {e}, got {value!r}") from None

    def resolved(self) -> Options:
        """The defaults that depend on other options filled in (none here; ``RunConfig`` has some)."""
        return self

    # -- as data ------------------------------------------------------------------------------------------------
    def replace(self, **changes) -> Options:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-like (options kept as ``pairs`` written as an object, as ``config.json`` shows them)."""
        return {f.name: dict(getattr(self, f.name)) if f.metadata["check"] is pairs else getattr(self, f.name)
                for f in dataclasses.fields(self)}

    def differences(self, other: Options, ignore=RESUME_KEYS) -> list[str]:
        """Names of the options (outside ``ignore``) whose values differ (``["kind"]`` for another kind of run)."""
        if type(other) is not type(self):
            return ["kind"]
        return [k for k, v in self.to_dict().items() if k not in ignore and other.to_dict()[k] != v]

    @classmethod
    def from_dict(cls, data, where: str = "the configuration", complete: bool = False) -> Options:
        """A configuration from JSON-like ``data``; ``complete``: every option must be present (a file we wrote).
        Errors name ``where``."""
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be a JSON object of run options, got {type(data).__name__}")
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ValueError(f"{where} has unknown options {unknown}; the options are {names}")
        missing = [n for n in names if n not in data and n not in ADDED_KEYS]
        if complete and missing:
            raise ValueError(f"{where} lacks options {missing}: it was not written by `{cls.command}`")
        try:
            return cls(**data)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None


class RunConfig(Options):
    """Everything that defines a training run. ``RunConfig(**options)`` raises a ``ValueError`` naming the first
    bad option; ``RunConfig.from_dict(d, where)`` also names where ``d`` came from (a file)."""

    task: str = option("copy", "a task from `rtrl list`", one_of(TASKS), "NAME")
    task_args: dict = option({}, "a task option, e.g. max_length=8 (repeatable)", options, "KEY=VALUE")
    cell: str = option("elman", "a cell from `rtrl list`, or the import path of any other, e.g. flax.linen:GRUCell",
                       cell_name, "NAME")
    cell_args: dict = option({}, "a cell option, e.g. activation=relu (repeatable)", options, "KEY=VALUE")
    hidden: int = option(32, "hidden size", positive_int, "N")
    method: str = option("rtrl", "a gradient method from `rtrl list`", one_of(methods.REGISTRY), "NAME")
    method_args: dict = option({}, "a method option, e.g. truncation=6 (repeatable)", options, "KEY=VALUE")
    trace_dtype: str | None = option(
        None,
        "store the traces in this dtype, e.g. bfloat16 (half the memory; they are updated and contracted in the "
        "parameters' dtype); default: the parameters' dtype",
        optional(one_of(methods.TRACE_DTYPES)),
        "DTYPE",
    )
    batch: int = option(16, "independent streams trained in parallel", positive_int, "B")
    update_every: int | None = option(
        None,
        "an optimiser update every k steps: 1 (fully online) for trace methods, the episode length (full BPTT) "
        "for sequence methods; a shorter k for bptt is truncated BPTT",
        optional(positive_int),
        "K",
    )
    optimizer: str = option("adam", "adam or sgd (optax)", one_of(OPTIMIZERS), "NAME")
    lr: float = option(1e-3, "learning rate", positive_float, "LR")
    clip: float | None = option(1.0, "clip the global gradient norm to this (`--no-clip`: do not)",
                                optional(positive_float), "C")
    steps: int = option(10000, "steps per stream, rounded up to whole updates", positive_int, "S")
    eval_every: int | None = option(None, "steps between evaluations (default: about 25 per run)",
                                    optional(positive_int), "E")
    eval_size: int = option(256, "held-out episodes per evaluation", positive_int, "M")
    stagger: bool = option(False, "start stream b at b/B of an episode (trace methods only)", flag)
    seed: int = option(0, "seed of the parameters and of the data", seed, "SEED")
    devices: int = option(1, "devices to split the streams over (the batch a multiple of it; docs/devices.md)",
                          positive_int, "N")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.batch % self.devices:
            raise ValueError(f"batch must be a multiple of devices={self.devices} (each device takes an equal "
                             f"share of the streams), got {self.batch}")
        self.parts()  # names, options, and whether the method applies to the cell and its windows

    # -- what it describes --------------------------------------------------------------------------------------
    def parts(self):
        """``(task, cell, method)`` objects; ``ValueError`` naming an unknown option or a method that does not
        apply."""
        task = make("task", TASKS, self.task, self.task_args)
        cell = make_cell(self.cell, self.cell_args, task.input_size, self.hidden)
        method = methods.resolve(make("method", methods.REGISTRY, self.method, self.method_args), cell)
        if self.trace_dtype is not None:
            method = with_trace_dtype(method, self.trace_dtype, self.method_args)
        if self.stagger and not method.online:
            raise ValueError(f"stagger needs a trace method; {self.method!r} updates on aligned windows")
        return task, cell, method

    def resolved(self) -> RunConfig:
        """The defaults that depend on other options filled in, and the budgets rounded up to whole updates."""
        task, _, method = self.parts()
        k = self.update_every or (1 if method.online else task.length)
        every = self.eval_every or k * max(1, round(self.steps / 25 / k))
        return self.replace(update_every=k, steps=-(-self.steps // k) * k, eval_every=-(-every // k) * k)

    def trainer(self) -> Trainer:
        """The trainer this (resolved) configuration describes; a new one each call (each compiles its own)."""
        config = self.resolved()
        task, cell, method = config.parts()
        return Trainer(
            task,
            cell,
            method,
            batch=config.batch,
            update_every=config.update_every,
            optimizer=make_optimizer(config.optimizer, config.lr, config.clip),
            eval_size=config.eval_size,
            stagger=config.stagger,
            seed=config.seed,
            devices=config.devices,
        )

    def label(self) -> str:
        return f"{self.cell} {self.method} k={self.update_every}"


def option_names(cls, exclude=()) -> dict[str, object]:
    """Keyword options of a constructor and their defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(cls).parameters.items()
        if name not in exclude and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def make_cell(name: str, args: dict, input_size: int, hidden_size: int):
    """The cell a run names: a registered one, or any other by its import path ``module.path:Name``."""
    if ":" in name:
        return from_import_path(name, input_size=input_size, hidden_size=hidden_size, **args)
    return make("cell", CELLS, name, args, exclude=("input_size", "hidden_size"), positional=(input_size, hidden_size))


def with_trace_dtype(method, trace_dtype: str, method_args: dict):
    """``method`` storing its traces in ``trace_dtype``; ``ValueError`` for a method without traces, or when the
    method's own option says otherwise."""
    if not method.online:
        raise ValueError(f"trace_dtype needs a trace method; {method.name!r} keeps no traces")
    if method_args.get("trace_dtype", trace_dtype) != trace_dtype:
        raise ValueError(f"trace_dtype is given twice, {trace_dtype!r} and method option "
                         f"{method_args['trace_dtype']!r}")
    return dataclasses.replace(method, trace_dtype=trace_dtype)


def make(kind: str, registry: dict, name: str, args: dict, exclude=(), positional=()):
    """``registry[name](*positional, **args)``, its options checked first; a ``ValueError`` names what is wrong."""
    if name not in registry:
        raise ValueError(f"unknown {kind} {name!r}; expected one of {sorted(registry)}")
    known = option_names(registry[name], exclude)
    unknown = set(args) - set(known)
    if unknown:
        raise ValueError(f"{kind} {name!r} has no option {sorted(unknown)}; its options are {sorted(known)}")
    try:
        return registry[name](*positional, **args)
    except TypeError as e:  # e.g. an option of the wrong type deep in a constructor
        raise ValueError(f"{kind} {name!r}: bad options {args}: {e}") from None
