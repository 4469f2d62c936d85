"""The run configuration: one typed, validated object from which a trainer, ``config.json`` and the CLI derive.

``RunConfig`` lists every option of a training run once, each with its default, its help text and its check.
``rtrl train``'s options are built from its fields (``rtrl.cli.options``), ``config.json`` is its ``to_dict()``,
and ``rtrl resume`` reads it back with ``from_dict``, so there is no second spelling of the schema. Construction
validates everything (types, ranges, names and options of the task, cell and method, and that the method
applies to the cell), so an invalid configuration never exists; ``resolved()`` fills the defaults that depend
on the others (``update_every``, ``eval_every``) and rounds the budgets to whole updates.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import math
import os
from collections.abc import Callable, Iterable
from typing import Any

import jax

from rtrl import methods
from rtrl.cells import CELLS
from rtrl.cells.adapters import CellError, from_import_path, is_trusted, split_import_path
from rtrl.checks import MAX_COUNT, default_dtype
from rtrl.frozen import Frozen
from rtrl.inspection import PROBE_LIMIT
from rtrl.methods.sensitivity import SnAp
from rtrl.training.tasks import TASKS
from rtrl.training.trainer import Trainer, make_optimizer

OPTIMIZERS = ("adam", "sgd")
RESUME_KEYS = ("steps", "devices")  # may change between a run and its resumption: the budget, where it runs
ADDED_KEYS = ("devices",)  # options newer than some run folders: a config.json without them takes the default
MAX_SEED = 2**32 - 1  # jax.random.PRNGKey takes a 32-bit seed without x64
MAX_STEPS = 2**30  # the step counter is 32-bit: the budget rounded up to whole updates (k <= 2**30) stays below 2**31


class Invalid(ValueError):
    """A value that fails a check; the message is what was expected (``"a positive integer"``)."""


class OptionError(ValueError):
    """A configuration that cannot be built because of one option (``option``: its field name, e.g. ``cell_args``),
    so that the command line can name the flag."""

    def __init__(self, message: str, option: str):
        super().__init__(message)
        self.option = option


# -- checks: value -> value, or Invalid(what was expected) ------------------------------------------------------
def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value):
    if not is_int(value) or value < 1:
        raise Invalid("a positive integer")
    if value > MAX_COUNT:
        raise Invalid(f"a positive integer up to 2**31 - 1 = {MAX_COUNT}")
    return value


def step_count(value):
    if is_int(value) and value > MAX_STEPS:
        raise Invalid(f"a positive integer up to 2**30 = {MAX_STEPS}")
    return positive_int(value)


def seed(value):
    if not is_int(value) or not 0 <= value <= MAX_SEED:
        raise Invalid(f"an integer from 0 to 2**32 - 1 = {MAX_SEED}")
    return value


def positive_float(value):
    if not (is_int(value) or isinstance(value, float)) or not (math.isfinite(value) and value > 0):
        raise Invalid("a positive finite number")
    return float(value)


def checked(name: str, check: Callable, value):
    """``check(value)``; its ``Invalid`` as a ``ValueError`` naming ``name``, what was expected and what came."""
    try:
        return check(value)
    except Invalid as e:
        raise ValueError(f"{name} must be {e}, got {value!r}") from None


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
    size_options = "--hidden, --batch or --eval-size"  # what to make smaller when a run does not fit

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = checked(field.name, field.metadata["check"], getattr(self, field.name))
            object.__setattr__(self, field.name, value)

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
    def from_dict(cls, data, where: str = "the configuration", complete: bool = False, trusted: bool = True
                  ) -> Options:
        """A configuration from JSON-like ``data``; ``complete``: every option must be present (a file we wrote).
        ``trusted=False`` for data from a file (``config.json``): a cell it names by import path must be one that
        ``importable`` allows, checked before anything is imported. Errors name ``where``."""
        if not trusted and isinstance(data, dict) and isinstance(data.get("cell"), str) and ":" in data["cell"]:
            check_importable(data["cell"], where)
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
        optional(step_count),
        "K",
    )
    optimizer: str = option("adam", "adam or sgd (optax)", one_of(OPTIMIZERS), "NAME")
    lr: float = option(1e-3, "learning rate", positive_float, "LR")
    clip: float | None = option(1.0, "clip the global gradient norm to this (`--no-clip`: do not)",
                                optional(positive_float), "C")
    steps: int = option(10000, "steps per stream, rounded up to whole updates", step_count, "S")
    eval_every: int | None = option(None, "steps between evaluations (default: about 25 per run)",
                                    optional(step_count), "E")
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

    def memory_needed(self) -> int:
        """A lower bound of the bytes the run holds at once (``check_memory``): the model's state and, per
        stream, its carry and traces (``state_bytes``), and the held-out episodes' inputs."""
        config = self.resolved()
        task, cell, method = config.parts()
        held_out = config.eval_size * (task.length * task.input_size + floats_of(lambda: cell.initial_carry(())))
        return state_bytes(cell, method, config.batch, config.update_every) + held_out * default_dtype().itemsize


# -- what a config.json may import ---------------------------------------------------------------------------------
ALLOW_IMPORT = "RTRL_ALLOW_IMPORT"  # environment variable: import paths allowed in run folders, comma-separated
allowed = contextvars.ContextVar("allowed", default=frozenset())  # import paths given on this command line


@contextlib.contextmanager
def allowed_imports(paths: Iterable[str]):
    """Within the block, run folders may name the cells of ``paths`` (import paths the user gave on the command
    line: ``--cell``, ``--allow-import``)."""
    token = allowed.set(allowed.get() | {p for p in paths if isinstance(p, str) and ":" in p})
    try:
        yield
    finally:
        allowed.reset(token)


def importable(path: str) -> bool:
    """Whether a run folder's ``config.json`` may name the cell ``path``: a cell class of ``rtrl.cells`` or of
    Flax's or Equinox's own modules, or a path the user allowed in this process (``allowed_imports``, or the
    ``RTRL_ALLOW_IMPORT`` environment variable). A run folder can come from anyone and anyone can edit it, so
    what it says about itself is never enough to run the code it names."""
    given = allowed.get() | {p.strip() for p in os.environ.get(ALLOW_IMPORT, "").split(",")}
    return path in given or is_trusted(path)


def check_importable(path: str, where: str) -> None:
    """A ``ValueError`` saying how to allow ``path`` unless ``importable``; nothing is imported unless trusted."""
    split_import_path(path)
    if not importable(path):
        raise ValueError(f"{where} names the cell {path!r}, which is neither a registered cell nor a cell class of "
                         f"rtrl, Flax or Equinox: importing it runs its code. If you trust it, pass --allow-import "
                         f"{path} (rtrl resume), or set {ALLOW_IMPORT}={path}")


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
        taken = sorted({"input_size", "hidden_size"} & set(args))
        if taken:
            raise OptionError(f"cell {name!r} has no option {taken}: its sizes are the task's input size and "
                              "hidden", "cell_args")
        try:
            return from_import_path(name, input_size=input_size, hidden_size=hidden_size, **args)
        except CellError as e:
            raise OptionError(str(e), e.option) from None
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
        raise OptionError(f"unknown {kind} {name!r}; expected one of {sorted(registry)}", kind)
    known = option_names(registry[name], exclude)
    unknown = set(args) - set(known)
    if unknown:
        raise OptionError(f"{kind} {name!r} has no option {sorted(unknown)}; its options are {sorted(known)}",
                          f"{kind}_args")
    try:
        return registry[name](*positional, **args)
    except TypeError as e:  # e.g. an option of the wrong type deep in a constructor
        raise OptionError(f"{kind} {name!r}: bad options {args}: {e}", f"{kind}_args") from None


# -- what a run needs and what the machine has -------------------------------------------------------------------
def floats_of(make: Callable) -> int:
    """Floats in the arrays ``make()`` returns, worked out on shapes alone."""
    return sum(math.prod(a.shape) for a in jax.tree.leaves(jax.eval_shape(make)))


def state_bytes(cell, method, streams: int, window: int) -> int:
    """A lower bound of the bytes of a model's state: the parameters three times (with their gradient and an
    optimiser moment) and, per stream, the carry and the traces an online method keeps (what ``rtrl.inspect``
    counts as trace floats per example) or the ``window`` of carries a sequence method keeps."""
    itemsize = default_dtype().itemsize
    params = floats_of(lambda: cell.init(jax.random.PRNGKey(0)))
    carry = floats_of(lambda: cell.initial_carry(()))
    if not method.online:
        traces = window * carry * itemsize
    elif isinstance(method, SnAp) and carry * params > PROBE_LIMIT:  # its pattern would be probed for real
        traces = 0
    else:
        shapes = method.trace_shapes(cell)
        traces = sum(math.prod(a.shape) * a.dtype.itemsize for a in jax.tree.leaves(shapes))
    return itemsize * (3 * params + streams * carry) + streams * traces


def available_memory(devices: int = 1) -> tuple[int, str]:
    """Bytes free for a run on ``devices`` devices, and where the figure comes from: the accelerators' own
    memory, else the host's (``MemAvailable`` in ``/proc/meminfo``, or ``os.sysconf``)."""
    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and "bytes_limit" in stats:
        free = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
        return free * devices, f"free on {devices} {device.platform} device{'s' * (devices > 1)}"
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["MemAvailable"].split()[0]) * 1024, "available (MemAvailable in /proc/meminfo)"
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "available (free physical memory)"


def gib(n: int) -> str:
    """Bytes for a person: GiB, MiB or bytes."""
    return f"{n / 2**30:,.1f} GiB" if n >= 2**27 else f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def check_memory(needed: int, devices: int = 1, smaller: str = "--hidden, --batch or --eval-size") -> None:
    """A ``ValueError`` saying how much is needed and how much there is, when ``needed`` bytes do not fit."""
    free, where = available_memory(devices)
    if needed > free:
        raise ValueError(f"the run needs at least {gib(needed)} of memory (its parameters with their optimiser state, "
                         f"and what every stream keeps) and this machine has {gib(free)} {where}; "
                         f"choose a smaller {smaller}")
