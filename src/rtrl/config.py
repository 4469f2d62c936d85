"""Configuration as plain validated data: a frozen dataclass whose fields each carry a default, a help line and a
check, and nothing else.

``option(default, help, check)`` declares a field; constructing a ``Config`` runs every field's check (a
``ValueError`` naming the field, what was expected and what came) and builds nothing: what the values name (a task,
a cell, a method, an environment) is made by the kind's ``assemble``. ``to_dict`` / ``from_dict`` are a run folder's
``config.json``; the command line's options are made from the fields (``rtrl.run.options``). ``rtrl.training``'s
``RunConfig`` and ``rtrl.rl``'s ``RLConfig`` are ones.

A check is a function ``value -> value`` that raises ``Invalid(what was expected)``; the common ones are here, once.

What a file may name (docs/reliability.md, "What a run folder may name"): a field that can name code declares
``imports(value)``, the import path ``module:Name`` that using the value would import when that is code other than
rtrl's own (``None`` otherwise). A configuration read from a file (``from_dict(trusted=False)``) is refused, before
anything is imported, when such a path is not one the user allowed: on this command line (``allowed_imports``:
``--allow-import``, or the field given again) or in ``RTRL_ALLOW_IMPORT``. One rule, for every such field.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import math
import os
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from rtrl.checks import positive_int_expected
from rtrl.frozen import Frozen

RESUME_KEYS = ("steps", "devices")  # may change between a run and its resumption: the budget, where it runs
# options newer than some run folders: a config.json without them takes the default, which is what a run of before
# them did (tests/test_config_formats.py writes each released format by hand). A training run's, then an RL run's:
ADDED_KEYS = ("devices", "trace_dtype", "readout_decay", "rate_weight", "rate_target", "rate_form",
              "algorithm", "epsilon", "explore_steps", "h_lr", "h_beta", "head_hidden", "extra_inputs", "health_every",
              "seeds", "critic_lr", "split_torso", "init_std", "state_std", "entropy_sign", "encoder_blocks",
              "encoder_width", "head_init", "std_map", "critic_network", "stop_at", "td_refresh")
# what a run folder's config.json says beside the options: where the run last computed (rtrl.provenance.platform);
# no option, so ``from_dict`` leaves them out
PLATFORM_KEYS = ("backend", "device")
MAX_SEED = 2**32 - 1  # jax.random.PRNGKey takes a 32-bit seed without x64
MAX_STEPS = 2**30  # the step counter is 32-bit: the budget rounded up to whole updates (k <= 2**30) stays below 2**31


class Invalid(ValueError):
    """A value that fails a check; the message is what was expected (``"a positive integer"``)."""


class OptionError(ValueError):
    """A configuration that cannot be assembled because of one option (``option``: its field name, e.g.
    ``cell_args``), so that the command line can name the flag."""

    def __init__(self, message: str, option: str):
        super().__init__(message)
        self.option = option

    def __reduce__(self):  # its arguments, not the message alone: it crosses a process pool's pipe whole
        return type(self), (str(self), self.option)


# -- checks: value -> value, or Invalid(what was expected) ------------------------------------------------------
def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value):
    expected = positive_int_expected(value)
    if expected:
        raise Invalid(expected)
    return value


def step_count(value):
    if is_int(value) and value > MAX_STEPS:
        raise Invalid(f"a positive integer up to 2**30 = {MAX_STEPS}")
    return positive_int(value)


def random_seed(value):
    if not is_int(value) or not 0 <= value <= MAX_SEED:
        raise Invalid(f"an integer from 0 to 2**32 - 1 = {MAX_SEED}")
    return value


def positive_float(value):
    if not (is_int(value) or isinstance(value, float)) or not (math.isfinite(value) and value > 0):
        raise Invalid("a positive finite number")
    return float(value)


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


def below_one(value):
    if not (is_int(value) or isinstance(value, float)) or not 0 <= value < 1:
        raise Invalid("a number in [0, 1)")
    return float(value)


def flag(value):
    if not isinstance(value, bool):
        raise Invalid("true or false")
    return value


def key_values(value):
    """Options of a named thing (``task_args``): a dict with string keys."""
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise Invalid("an object of options (KEY: VALUE)")
    return value


def pairs(value):
    """``key_values`` as a sorted tuple of ``(name, value)`` pairs, so that the configuration stays hashable (a
    dict, or the JSON lists of pairs that ``config.json`` holds, are accepted)."""
    try:
        items = dict(value).items() if not isinstance(value, str) else None
    except (TypeError, ValueError):
        items = None
    if items is None or not all(isinstance(k, str) for k, _ in items):
        raise Invalid("an object of options (KEY: VALUE)")
    return tuple(sorted(items))


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


def checked(name: str, check: Callable, value):
    """``check(value)``; its ``Invalid`` as a ``ValueError`` naming ``name``, what was expected and what came."""
    try:
        return check(value)
    except Invalid as e:
        raise ValueError(f"{name} must be {e}, got {value!r}") from None


# -- what a file may name: code is imported only where the user named it -------------------------------------------
ALLOW_IMPORT = "RTRL_ALLOW_IMPORT"  # environment variable: import paths a run folder may name, comma-separated
_allowed = contextvars.ContextVar("allowed", default=frozenset())  # import paths given on this command line


@contextlib.contextmanager
def allowed_imports(paths: Iterable):
    """Within the block, files may name the code of ``paths`` (import paths ``module:Name`` the user gave on the
    command line: ``--allow-import``, or a field such as ``--cell`` or ``--env`` naming it)."""
    token = _allowed.set(_allowed.get() | {p for p in paths if isinstance(p, str) and ":" in p})
    try:
        yield
    finally:
        _allowed.reset(token)


def allowed(path: str) -> bool:
    """Whether the user allowed files to name the import path ``path`` (``allowed_imports``, ``RTRL_ALLOW_IMPORT``)."""
    return path in _allowed.get() | {p.strip() for p in os.environ.get(ALLOW_IMPORT, "").split(",")}


def check_allowed(field: str, value, path: str, where: str) -> None:
    """A ``ValueError`` saying how to allow it unless the user allowed ``path``, the code that the ``field`` of a
    file (``where``) names with ``value``; nothing is imported."""
    if not allowed(path):
        module = path.partition(":")[0]
        raise ValueError(f"{where} names the {field} {value!r}, which would import the module {module!r} and run its "
                         f"code; a run folder may name only rtrl's own code and Flax or Equinox cell classes. If you "
                         f"trust it, pass --allow-import {path} (rtrl resume), or set {ALLOW_IMPORT}={path}")


def option(default, help: str, check: Callable, metavar: str | None = None, imports: Callable | None = None):
    """A field of a ``Config``: its default, help line (for ``--help`` and docs/cli.md) and check. ``imports(value)``:
    for a field that can name code, the import path that the value would import when it is not rtrl's own code, else
    ``None`` (a file's value is refused unless the user allowed it: ``Config.from_dict(trusted=False)``)."""
    meta = {"help": help, "check": check, "metavar": metavar, "imports": imports}
    if isinstance(default, dict):
        return dataclasses.field(default_factory=dict, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def defaults(cls) -> dict[str, Any]:
    """Each field's default, read from the class (no configuration is constructed)."""
    return {f.name: f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            for f in dataclasses.fields(cls)}


def says_what_unread_does(name: str, value) -> bool:
    """Whether an option's value states what a run that never reads the option does anyway (``clip`` None, the
    command line's ``--no-clip``: no clip), so that giving it is no mistake."""
    return name == "clip" and value is None


class Config(Frozen):
    """A configuration whose fields are ``option()``s: construction runs every field's check (a ``ValueError``
    naming the field and what was expected) and builds nothing; ``to_dict`` / ``from_dict`` are its
    ``config.json``."""

    command = "rtrl train"  # what writes it, for messages
    size_options = "--hidden, --batch or --eval-size"  # what to make smaller when a run does not fit

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = checked(field.name, field.metadata["check"], getattr(self, field.name))
            object.__setattr__(self, field.name, value)

    def replace(self, **changes) -> Config:
        return dataclasses.replace(self, **changes)

    @classmethod
    def unread_options(cls, values: dict) -> list[str]:
        """The fields of ``values`` (every field's value) that construction would refuse as doing nothing under the
        others (none here; ``RLConfig``'s and ``RunConfig``'s are), so that a preset's may be dropped
        (``config_from_args``) and a file written before they were refused reads back (``from_dict``)."""
        return []

    @classmethod
    def well_formed(cls, name: str, value) -> bool:
        """Whether ``value`` passes the option ``name``'s own check: an option never read that a file holds is read
        back at its default only where it is a value the option takes (any other is refused, not reset)."""
        check = next(f.metadata["check"] for f in dataclasses.fields(cls) if f.name == name)
        try:
            checked(name, check, value)
        except (ValueError, TypeError):
            return False
        return True

    @classmethod
    def never_read_options(cls, values: dict) -> dict[str, str]:
        """The fields that the configuration ``values`` (every field's value) never reads, whatever their values, each
        with why (none here; ``rtrl.rl.RLConfig``'s and ``RunConfig``'s are): ``stored`` leaves them out, ``from_dict``
        does not miss them, and the command line refuses one given, even at its default (``config_from_args``)."""
        return {}

    def stored(self) -> dict[str, Any]:
        """What a run folder's ``config.json`` holds: ``to_dict`` less the options this configuration never reads
        (``never_read_options``), which read back at their defaults (``from_dict``)."""
        values = self.to_dict()
        unused = set(self.never_read_options(values))
        return {name: value for name, value in values.items() if name not in unused}

    def to_dict(self) -> dict[str, Any]:
        """JSON-like, as ``config.json`` shows it: options kept as ``pairs`` an object, a tuple of names a list."""
        def plain(field):
            value = getattr(self, field.name)
            if field.metadata["check"] is pairs:
                return dict(value)
            return list(value) if isinstance(value, tuple) else value  # a tuple of names as JSON writes it

        return {f.name: plain(f) for f in dataclasses.fields(self)}

    def imports(self) -> list[str]:
        """The import paths of code outside rtrl that this configuration names (what its fields' ``imports`` say):
        given by the caller, so a file may name them back (``allowed_imports``)."""
        found = [field.metadata["imports"](getattr(self, field.name)) for field in dataclasses.fields(self)
                 if field.metadata["imports"] is not None]
        return [path for path in found if path is not None]

    def differences(self, other: Config, ignore=RESUME_KEYS) -> list[str]:
        """Names of the options (outside ``ignore``) whose values differ (``["kind"]`` for another kind of run)."""
        if type(other) is not type(self):
            return ["kind"]
        return [k for k, v in self.to_dict().items() if k not in ignore and other.to_dict()[k] != v]

    @classmethod
    def from_dict(cls, data, where: str = "the configuration", complete: bool = False, trusted: bool = True
                  ) -> Config:
        """A configuration from JSON-like ``data``; ``complete``: every option must be present (a file we wrote).
        ``trusted=False`` for data from a file (``config.json``): a field naming code outside rtrl (its ``imports``)
        must name code the user allowed (``check_allowed``), checked before anything is imported. Errors name
        ``where``."""
        if not trusted and isinstance(data, dict):
            for field in dataclasses.fields(cls):
                if field.metadata["imports"] is not None and field.name in data:
                    path = field.metadata["imports"](data[field.name])
                    if path is not None:
                        check_allowed(field.name, data[field.name], path, where)
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be a JSON object of run options, got {type(data).__name__}")
        data = {k: v for k, v in data.items() if k not in PLATFORM_KEYS}  # config.json's, beside the options
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(data) - set(names))
        if unknown:
            newer = " (written by a newer rtrl? this one does not know them)" if complete else ""
            raise ValueError(f"{where} has unknown options {unknown}{newer}; the options are {names}")
        default = defaults(cls)
        unused = cls.never_read_options({**default, **data})  # what ``stored`` leaves out
        missing = [n for n in names if n not in data and n not in ADDED_KEYS and n not in unused]
        if complete and missing:
            raise ValueError(f"{where} lacks options {missing}: it was not written by `{cls.command}`")
        if complete:  # a file we wrote before its run's unread options were refused: they read back at their defaults
            data = {**data, **{name: default[name] for name in cls.unread_options({**default, **data})
                               if cls.well_formed(name, data[name])}}
        try:
            return cls(**data)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None


class Preset(NamedTuple):
    """A named configuration (``--preset NAME``): a one-line summary and its options (over the defaults)."""

    summary: str
    options: dict


# -- what the names of a configuration name ------------------------------------------------------------------------
def option_names(cls, exclude=()) -> dict[str, object]:
    """Keyword options of a constructor and their defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(cls).parameters.items()
        if name not in exclude and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }


def make(kind: str, registry: dict, name: str, args: dict, exclude=(), positional=()):
    """``registry[name](*positional, **args)``, its options checked first; an ``OptionError`` names what is
    wrong (``kind``: the option, e.g. ``"task"``; its options are ``kind_args``)."""
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
    except OptionError:
        raise
    except ValueError as e:  # an option's value the constructor refuses: named as the option it came through
        raise OptionError(f"{kind} {name!r}: {e}", f"{kind}_args") from None
