"""The cell protocol: hyper-parameters in a frozen dataclass, everything else pure functions.

A cell is a recurrence ``carry_t, h_t = step(params, carry_{t-1}, x_t)``. Shapes follow the row-vector
convention with any number of leading batch dimensions: ``x`` is ``(*batch, input_size)``, every carry leaf is
``(*batch, k)`` and ``h`` is ``(*batch, hidden_size)``. Parameters are a flat dict of arrays with no batch
dimension, so one ``step`` serves a single example, a batch, ``vmap``, ``grad`` and ``jit`` alike.

Optional, for the trace methods, as the typed protocols of ``rtrl.capabilities`` (a cell has a capability when
its class defines the members):

* ``output(params, carry_t, x_t) -> h_t`` (``HasOutput``): for a cell whose ``h`` is a function of the new carry
  (``step`` must return exactly ``(carry_t, output(params, carry_t, x_t))``). Exact methods then contract the new
  traces and skip the backward pass through the recurrence (``rtrl.online``).

* ``trace_init / trace_update / trace_contract`` (``HandDerivedTraces``, with ``trace_to_params``, which every
  cell has: the identity unless overridden): hand-derived ("closed-form") eligibility traces, used by the
  ``closed_form`` method; see ``rtrl.methods.closed_form`` for their contract.

A subclass is a frozen dataclass without saying so (``rtrl.frozen.Frozen``): it declares its options as annotated
class attributes. It declares ``param_shapes()``; the default ``init`` then draws each parameter by its shape
(``init_param``), so a cell overrides ``init`` only where its initialisation is special.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int, default_dtype
from rtrl.frozen import Frozen
from rtrl.validate import CellInterface, as_batch_shape, check_key

Params = dict[str, jax.Array]
Carry = Any  # a pytree whose leaves are (*batch, k) arrays


def glorot(key: jax.Array, shape: tuple[int, int], dtype) -> jax.Array:
    """Uniform Glorot initialisation, the default of most RNN libraries."""
    limit = math.sqrt(6.0 / (shape[0] + shape[1]))
    return jax.random.uniform(key, shape, dtype, -limit, limit)


class Cell(Frozen):
    """Base class of every cell: sizes, input validation, default initialisation and zero carries."""

    input_size: int
    hidden_size: int

    def __init_subclass__(cls, **kwargs) -> None:
        """A subclass's own ``init`` and ``initial_carry`` check their first argument as the defaults do, so every
        cell refuses a non-key, or reads one int as a batch shape, alike (not an error from inside ``jax.random``)."""
        super().__init_subclass__(**kwargs)
        for name, check in (("init", check_key), ("initial_carry", as_batch_shape)):
            if name in cls.__dict__:
                setattr(cls, name, checking_first_argument(cls.__dict__[name], check))

    def __post_init__(self) -> None:
        for name in ("input_size", "hidden_size"):
            check_positive_int(name, getattr(self, name))

    def __check_init__(self) -> None:
        """Once the options are normalised (``rtrl.frozen``): an option given (away from its default) that the
        cell's other options leave unread is refused in one line, naming it and why (``unread_options``)."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for name, why in self.unread_options().items():
            value = getattr(self, name)
            if value != defaults[name]:
                raise ValueError(f"{name}={value!r} does nothing here: {why}; leave it out (or change that)")

    def unread_options(self) -> dict[str, str]:
        """The options this cell's other options make it ignore, each with why (``{"v_reset": "reset='subtract'
        reads no reset value"}``); a cell with conditional options says so."""
        return {}

    # -- to be provided by subclasses -------------------------------------------------------------------
    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every parameter's name and shape."""
        raise NotImplementedError

    def carry_sizes(self) -> dict[str, int] | None:
        """Trailing sizes of the carry's leaves, ``{name: k}``; ``None`` means a bare ``(*batch, N)`` array."""
        return None

    def step(self, params: Params, carry: Carry, x: jax.Array) -> tuple[Carry, jax.Array]:
        raise NotImplementedError

    # -- shared -----------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self).__name__

    def init(self, key: jax.Array, dtype=None) -> Params:
        """Every parameter of ``param_shapes()`` drawn by ``init_param``, each from its own key."""
        check_key(key)
        return init_params(self.param_shapes(), key, default_dtype(dtype), self.init_param)

    def init_param(self, name: str, shape: tuple[int, ...], key: jax.Array, dtype) -> jax.Array:
        """The default by shape (``default_param``). A cell overrides this for the parameters it initialises
        otherwise (and falls back on it for the rest)."""
        return default_param(name, shape, key, dtype)

    def initial_carry(self, batch_shape: tuple[int, ...] = (), dtype=None) -> Carry:
        """Zeros, the state before the first input (``batch_shape`` a tuple, or one int as numpy reads a shape)."""
        batch_shape = as_batch_shape(batch_shape)
        dtype = default_dtype(dtype)
        sizes = self.carry_sizes()
        if sizes is None:
            return jnp.zeros(batch_shape + (self.hidden_size,), dtype)
        return {name: jnp.zeros(batch_shape + (k,), dtype) for name, k in sizes.items()}

    def trace_to_params(self, params: Params, grads: Params) -> Params:
        """Hand-derived traces' gradients (a sum of ``trace_contract``) laid out like ``params``: as they are, unless
        a cell lays its traces out otherwise (``rtrl.capabilities.HandDerivedTraces``)."""
        return grads

    def check_input(self, x: jax.Array) -> None:
        """Shapes are static under jit, so this costs nothing at run time."""
        if jnp.ndim(x) < 1 or jnp.shape(x)[-1] != self.input_size:
            raise ValueError(
                f"x must have shape (*batch, input_size={self.input_size}) for {self.name}, "
                f"got shape {jnp.shape(x)}"
            )

    def check_carry(self, carry: Params, names) -> None:
        """``carry`` must be a dict holding every one of ``names`` (a missing key would surface deep in the step as a
        bare ``KeyError``)."""
        if not isinstance(carry, dict):
            raise ValueError(f"carry for {self.name} must be a dict with keys {sorted(names)}, got "
                             f"{type(carry).__name__}")
        missing = set(names) - set(carry)
        if missing:
            raise ValueError(f"carry for {self.name} lacks {sorted(missing)}; expected keys {sorted(names)} "
                             "(cell.initial_carry makes one)")

    def check_params(self, params: Params, shapes: dict[str, tuple[int, ...]]) -> None:
        missing = set(shapes) - set(params)
        if missing:
            raise ValueError(f"params for {self.name} lack {sorted(missing)}; expected keys {sorted(shapes)}")
        for name, shape in shapes.items():
            if jnp.shape(params[name]) != shape:
                raise ValueError(
                    f"params[{name!r}] of {self.name} must have shape {shape}, got {jnp.shape(params[name])}"
                )


CellInterface.register(Cell)  # what rtrl.validate.check_cell accepts


# -- cells made of cells (rtrl.cells.Stack, Network, Parallel): their members, parameters and carries checked alike --
def member_cells(name: str, value, note: str = "") -> tuple[Cell, ...]:
    """``value``, a list or tuple of cells, as a tuple; ``ValueError`` naming the option ``name`` (and ``note``)
    for anything else, or for none."""
    cells = tuple(value) if isinstance(value, list | tuple) else None
    if not cells or not all(isinstance(c, Cell) for c in cells):
        raise ValueError(f"{name} must be a non-empty sequence of cells{note}, got {value!r}")
    return cells


def check_member_params(params, names, what: str) -> None:
    """``params`` must be a dict with exactly the keys ``names`` (one per member); ``what`` names the cell ("a
    2-layer Stack")."""
    if not isinstance(params, dict) or set(params) != set(names):
        raise ValueError(f"params of {what} must be a dict with keys {list(names)}, "
                         f"got {sorted(params) if isinstance(params, dict) else type(params).__name__}")


def check_member_carry(carry, count: int, what: str, members: str) -> None:
    """``carry`` must be a tuple of ``count`` carries, one per member (``members``: "layers", "cells")."""
    if not isinstance(carry, tuple) or len(carry) != count:
        raise ValueError(f"carry of {what} must be a tuple of the {members}' carries")


def checking_first_argument(method: Callable, check: Callable) -> Callable:
    """``method`` whose first argument after ``self`` (given by place or by name) first goes through ``check``,
    whose result, unless ``None``, replaces it."""
    name = list(inspect.signature(method).parameters)[1]

    def checked_value(value):
        result = check(value)
        return value if result is None else result

    @functools.wraps(method)
    def checked(self, *args, **kwargs):
        if args:
            args = (checked_value(args[0]),) + args[1:]
        elif name in kwargs:
            kwargs[name] = checked_value(kwargs[name])
        return method(self, *args, **kwargs)

    return checked


def default_param(name: str, shape: tuple[int, ...], key: jax.Array, dtype) -> jax.Array:
    """A matrix Glorot-uniform, anything else zeros."""
    return glorot(key, shape, dtype) if len(shape) == 2 else jnp.zeros(shape, dtype)


def init_params(shapes: dict[str, tuple[int, ...]], key: jax.Array, dtype,
                init_param: Callable = default_param) -> Params:
    """``{name: init_param(name, shape, key_i, dtype)}``, each parameter from its own split of ``key``."""
    keys = jax.random.split(key, max(len(shapes), 1))
    return {name: init_param(name, shape, k, dtype) for (name, shape), k in zip(shapes.items(), keys, strict=False)}


class Activation(NamedTuple):
    """An element-wise function with its derivative written out, for hand-derived traces."""

    fn: Callable[[jax.Array], jax.Array]
    derivative: Callable[[jax.Array], jax.Array]


ACTIVATIONS = {
    "tanh": Activation(jnp.tanh, lambda s: 1.0 - jnp.tanh(s) ** 2),
    "sigmoid": Activation(jax.nn.sigmoid, lambda s: jax.nn.sigmoid(s) * (1.0 - jax.nn.sigmoid(s))),
    "relu": Activation(jax.nn.relu, lambda s: (s > 0).astype(s.dtype)),
    "identity": Activation(lambda s: s, jnp.ones_like),
}


def activation(name: str) -> Activation:
    """Element-wise activations by name (a constructor option of the cells)."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]
