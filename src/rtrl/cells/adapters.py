"""Bring your own cell: plain JAX functions, Flax (linen and nnx) and Equinox cells as ``rtrl`` cells, unmodified.

Every adapter is a cell written for **one example**: ``init(key) -> params``, ``step(params, carry, x) ->
(carry, h)``, and a zero carry. The library maps the step over any leading batch dimensions, so the cell
works with ``rtrl.sequence_grad``, ``rtrl.online`` and the trainer like any other, and every method applies:
``"auto"`` finds the cheapest exact traces from the step alone (``rtrl.inspect``). Parameters stay the
framework's own pytree, so gradients go straight back into it and into optax:

* ``from_function(init_fn, step_fn, carry_fn, input_size=, hidden_size=)``: any functions;
* ``from_flax(module, input_size=)``: a ``flax.linen`` RNN cell (``module(carry, x) -> (carry, h)``); params
  are ``module.init(...)["params"]``;
* ``from_nnx(module)``: a ``flax.nnx`` RNN cell; params are its ``nnx.Param`` state (``nnx.split``);
* ``from_equinox(module)``: an Equinox cell called as ``module(x, state) -> state``; params are
  ``eqx.partition(module, eqx.is_inexact_array)[0]``; ``h`` is the state, or its first element when the state
  is a tuple (``LSTMCell``'s ``(h, c)``).

Flax and Equinox are imported only when their adapter is called (the ``flax`` / ``equinox`` extra).
Each carry leaf must be a vector per example (every framework's cells satisfy this). An adapter checks the
step once, at construction, on shapes alone: a step that returns the wrong structure or changes the carry's
shape, or parameters that do not match ``init``'s, is a ``ValueError`` that names what was expected.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.cells.base import Carry, Cell, Params
from rtrl.checks import check_positive_int, default_dtype


class Identity:
    """Holds an object compared and hashed by identity (a cell is a static argument of ``jax.jit``: two cells
    made from two distinct modules must not share compiled functions)."""

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other) -> bool:
        return isinstance(other, Identity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __repr__(self) -> str:
        return type(self.obj).__name__


def describe(tree) -> str:
    return str(jax.tree.map(lambda a: tuple(jnp.shape(a)), tree))


def over_examples(fn: Callable, batch_ndim: int) -> Callable:
    """``fn(params, carry, x)`` of one example mapped over ``batch_ndim`` leading dimensions of carry and x."""
    for _ in range(batch_ndim):
        fn = jax.vmap(fn, in_axes=(None, 0, 0))
    return fn


class AdaptedCell(Cell):
    """A cell from one-example functions (``example_init``, ``example_step``, ``example_carry``), batched here."""

    # -- one example, provided by each adapter ----------------------------------------------------------
    def example_init(self, key: jax.Array) -> Params:
        raise NotImplementedError

    def example_step(self, params: Params, carry: Carry, x: jax.Array) -> tuple[Carry, jax.Array]:
        raise NotImplementedError

    def example_carry(self) -> Carry:
        raise NotImplementedError

    # What an error message calls each of the three (``from_function`` names its arguments).
    INIT, STEP, CARRY = "the init", "the step", "the zero carry"

    # -- shared -----------------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        check_positive_int("input_size", self.input_size)  # before the step is traced on inputs of that size
        if self.hidden_size is None:  # the width of h, from the step itself
            object.__setattr__(self, "hidden_size", self.h_shape()[0])
        super().__post_init__()
        self.check_example()

    @functools.cached_property
    def params_like(self):
        def init(key):
            params = self.example_init(key)
            odd = [leaf for leaf in jax.tree.leaves(params) if not isinstance(leaf, ARRAY_LIKE)]
            if odd or not jax.tree.leaves(params):
                raise NotArrays(f"{self.INIT} of {self.name} must return the parameters as a pytree of arrays, got "
                                f"{type(odd[0] if odd else params).__name__} {str(odd[0] if odd else params)[:40]!r}")
            return params

        try:
            return jax.eval_shape(init, jax.random.PRNGKey(0))
        except NotArrays as e:
            raise TypeError(str(e)) from None

    @functools.cached_property
    def carry_like(self):
        return jax.eval_shape(self.example_carry)

    def example_output(self):
        """``(carry, h)`` of one step of one example, as shapes; ``ValueError`` unless it is such a pair."""
        carry = self.carry_like
        bad = [describe(a) for a in jax.tree.leaves(carry) if len(a.shape) != 1]
        if not jax.tree.leaves(carry) or bad:
            raise ValueError(f"the carry of {self.name} must be a pytree of vectors (k,) for one example, got "
                             f"{describe(carry)}")
        x = jax.ShapeDtypeStruct((self.input_size,), default_dtype())
        try:
            out = jax.eval_shape(self.example_step, self.params_like, carry, x)
        except Exception as e:  # whatever a user's step raises, say where it came from
            raise ValueError(self.size_mismatch(carry) or (
                f"{self.STEP} of {self.name} fails on one example (input ({self.input_size},), carry "
                f"{describe(carry)}): {reason(e)}")) from e
        if not (isinstance(out, tuple) and len(out) == 2):
            raise ValueError(f"{self.STEP} of {self.name} must return (carry, h), got {describe(out)}")
        return out

    def size_mismatch(self, carry) -> str:
        """Why the one-example step fails, where another input size or carry width (one of the parameters'
        sizes, or hidden_size) makes it run: the size to fix, in words; else ``""``."""
        sizes = sorted({n for a in jax.tree.leaves(self.params_like) for n in a.shape} | {self.hidden_size or 1})

        def runs(carry, input_size):
            try:
                jax.eval_shape(self.example_step, self.params_like, carry,
                               jax.ShapeDtypeStruct((input_size,), default_dtype()))
                return True
            except Exception:
                return False

        for n in sizes:
            if n != self.input_size and runs(carry, n):
                return (f"{self.STEP} of {self.name} fails on inputs of input_size={self.input_size} but runs on "
                        f"inputs of size {n}: is input_size {n}?")
        for n in sizes:
            if runs(jax.tree.map(lambda a, n=n: jax.ShapeDtypeStruct((n,), a.dtype), carry), self.input_size):
                said = f" (hidden_size={n})" if n == self.hidden_size else ""
                return (f"{self.CARRY} of {self.name} is {describe(carry)}, but {self.STEP} runs on a carry of "
                        f"width {n}{said}: make the carry's vectors ({n},)")
        return ""

    def h_shape(self) -> tuple[int, ...]:
        shape = jnp.shape(self.example_output()[1])
        if len(shape) != 1:
            raise ValueError(f"{self.STEP} of {self.name} must return a vector h for one example, got shape {shape}")
        return shape

    def check_example(self) -> None:
        """The one-example step, on shapes alone: carry leaves are vectors, the step returns ``(carry, h)`` with
        the carry's structure and shapes and ``h`` of shape ``(hidden_size,)``."""
        carry = self.carry_like
        new, h = self.example_output()
        if jax.tree.structure(new) != jax.tree.structure(carry) or describe(new) != describe(carry):
            raise ValueError(f"{self.STEP} of {self.name} must return a carry like its input {describe(carry)}, got "
                             f"{describe(new)}")
        if jnp.shape(h) != (self.hidden_size,):
            raise ValueError(f"{self.STEP} of {self.name} must return h of shape (hidden_size,) = "
                             f"({self.hidden_size},) for one example, got {jnp.shape(h)}")

    def param_shapes(self) -> Params:
        return jax.tree.map(lambda a: a.shape, self.params_like)

    def init(self, key: jax.Array, dtype=None) -> Params:
        """The framework's own parameters, floating leaves in ``dtype`` (default: JAX's default float)."""
        dtype = default_dtype(dtype)
        return jax.tree.map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.inexact) else a,
                            self.example_init(key))

    def initial_carry(self, batch_shape: tuple[int, ...] = (), dtype=None) -> Carry:
        batch_shape = tuple(batch_shape)
        if not all(isinstance(n, int) and n >= 0 for n in batch_shape):
            raise ValueError(f"batch_shape must be a tuple of non-negative ints, got {batch_shape!r}")
        return jax.tree.map(lambda a: jnp.zeros(batch_shape + a.shape, default_dtype(dtype)), self.carry_like)

    def check_param_tree(self, params: Params) -> None:
        expected = self.params_like
        if jax.tree.structure(params) != jax.tree.structure(expected) or describe(params) != describe(expected):
            raise ValueError(f"params of {self.name} must have the structure and shapes of its init(key), "
                             f"{describe(expected)}, got {describe(params)}")

    def step(self, params: Params, carry: Carry, x: jax.Array) -> tuple[Carry, jax.Array]:
        self.check_input(x)
        self.check_param_tree(params)
        batch = jnp.shape(x)[:-1]
        expected = jax.tree.map(lambda a: jax.ShapeDtypeStruct(batch + a.shape, a.dtype), self.carry_like)
        if jax.tree.structure(carry) != jax.tree.structure(expected) or describe(carry) != describe(expected):
            raise ValueError(f"carry of {self.name} must be {describe(expected)} for inputs of batch shape {batch}, "
                             f"got {describe(carry)}")
        new, h = over_examples(self.example_step, len(batch))(params, carry, x)
        # A module that computes in its own dtype (nnx.SimpleCell: float32) must not change the carry's: a scan
        # needs it fixed.
        return jax.tree.map(lambda n, c: n.astype(c.dtype), new, carry), h


class FunctionCell(AdaptedCell):
    """``from_function``: ``init_fn(key)``, ``step_fn(params, carry, x) -> (carry, h)`` and ``carry_fn()``, for
    one example. It has no ``output`` (``rtrl.capabilities.HasOutput``): ``FunctionCellWithOutput`` has."""

    init_fn: Callable = None
    step_fn: Callable = None
    carry_fn: Callable = None
    label: str = "FunctionCell"

    INIT, STEP, CARRY = "init_fn", "step_fn", "carry_fn"

    @property
    def name(self) -> str:
        return self.label

    def example_init(self, key):
        return self.init_fn(key)

    def example_step(self, params, carry, x):
        return self.step_fn(params, carry, x)

    def example_carry(self):
        return self.carry_fn()


class FunctionCellWithOutput(FunctionCell):
    """``from_function`` with ``output_fn(params, new_carry, x) -> h`` for one example: the cell has ``output``
    (``rtrl.capabilities.HasOutput``), so exact methods contract the new traces, with no backward pass through the
    recurrence (see ``rtrl.online``)."""

    output_fn: Callable = None

    def __check_init__(self) -> None:
        if not callable(self.output_fn):
            raise ValueError(f"output_fn must be a function, got {self.output_fn!r}")

    def output(self, params: Params, carry: Carry, x: jax.Array) -> jax.Array:
        return over_examples(self.output_fn, jnp.ndim(x) - 1)(params, carry, x)


def from_function(init_fn: Callable, step_fn: Callable, carry_fn: Callable, *, input_size: int, hidden_size: int,
                  name: str = "FunctionCell", output_fn: Callable | None = None) -> FunctionCell:
    """A cell from plain functions of one example (see ``FunctionCell``). ``output_fn(params, new_carry, x) -> h``,
    if given, must be how ``step_fn`` makes ``h`` from its new carry: exact methods then skip the backward pass
    through the recurrence (faster; checked at one random point)."""
    for arg, fn in (("init_fn", init_fn), ("step_fn", step_fn), ("carry_fn", carry_fn)):
        if not callable(fn):
            raise ValueError(f"{arg} must be a function, got {fn!r}")
    if output_fn is not None and not callable(output_fn):
        raise ValueError(f"output_fn must be a function or None, got {output_fn!r}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string (the cell's name in messages), got {name!r}")
    if output_fn is None:
        return FunctionCell(input_size, hidden_size, init_fn, step_fn, carry_fn, name)
    cell = FunctionCellWithOutput(input_size, hidden_size, init_fn, step_fn, carry_fn, name, output_fn)
    check_output(cell)
    return cell


def check_output(cell: FunctionCellWithOutput) -> None:
    """``ValueError`` unless ``output_fn`` gives the step's own ``h`` at a random point (one example)."""
    key = jax.random.PRNGKey(0)
    params = cell.example_init(key)
    carry = jax.tree.map(lambda a: jax.random.normal(key, a.shape, a.dtype), cell.example_carry())
    x = jax.random.normal(jax.random.PRNGKey(1), (cell.input_size,))
    new, h = cell.example_step(params, carry, x)
    if not jnp.allclose(cell.output_fn(params, new, x), h, rtol=1e-5, atol=1e-6):
        raise ValueError(f"output_fn of {cell.name} must give the step's h from its new carry; it does not")


class LinenCell(AdaptedCell):
    """A ``flax.linen`` RNN cell; params are ``module.init(...)["params"]``."""

    module: Any = None

    @property
    def name(self) -> str:
        return type(self.module).__name__

    def example_carry(self):
        carry = self.module.initialize_carry(jax.random.PRNGKey(0), (self.input_size,))
        return jax.tree.map(jnp.zeros_like, carry)

    def example_init(self, key):
        return self.module.init(key, self.example_carry(), jnp.zeros((self.input_size,)))["params"]

    def example_step(self, params, carry, x):
        return self.module.apply({"params": params}, carry, x)


def from_flax(module, *, input_size: int) -> LinenCell:
    """A ``flax.linen`` RNN cell (``SimpleCell``, ``GRUCell``, ``LSTMCell``, ``OptimizedLSTMCell``, ``MGUCell``, a
    user's ``RNNCellBase``) as an ``rtrl`` cell reading inputs of ``input_size``."""
    import flax.linen as nn

    if not isinstance(module, nn.Module) or not callable(getattr(module, "initialize_carry", None)):
        raise ValueError(f"module must be a flax.linen recurrent cell (an nn.RNNCellBase with initialize_carry), "
                         f"got a {type(module).__name__}")
    return LinenCell(input_size, None, module)


class NNXCell(AdaptedCell):
    """A ``flax.nnx`` RNN cell; params are its ``nnx.Param`` state."""

    graphdef: Any = None
    source: Identity = None  # the module: its parameters and other state

    @property
    def name(self) -> str:
        return type(self.source.obj).__name__

    def parts(self):
        from flax import nnx

        return nnx.split(self.source.obj, nnx.Param, ...)

    def example_carry(self):
        from flax import nnx

        carry = self.source.obj.initialize_carry((self.input_size,), rngs=nnx.Rngs(0))
        return jax.tree.map(jnp.zeros_like, carry)

    def example_init(self, key):
        return self.parts()[1]

    def example_step(self, params, carry, x):
        from flax import nnx

        return nnx.merge(self.graphdef, params, self.parts()[2])(carry, x)


def from_nnx(module) -> NNXCell:
    """A ``flax.nnx`` RNN cell (``nnx.GRUCell``, ``nnx.LSTMCell``, ``nnx.SimpleCell``, ...) as an ``rtrl`` cell;
    ``init`` returns the module's own ``nnx.Param`` state (the key is not used)."""
    from flax import nnx

    if not isinstance(module, nnx.Module) or not callable(getattr(module, "initialize_carry", None)):
        raise ValueError(f"module must be a flax.nnx recurrent cell (with initialize_carry), got a "
                         f"{type(module).__name__}")
    input_size = getattr(module, "in_features", None)
    if not isinstance(input_size, int):
        raise ValueError(f"module must have an int in_features (the input size), got {input_size!r}")
    graphdef = nnx.split(module, nnx.Param, ...)[0]
    return NNXCell(input_size, None, graphdef, Identity(module))


class EquinoxCell(AdaptedCell):
    """An Equinox cell ``module(x, state) -> state``; params are its inexact arrays."""

    static: Any = None  # the module with its arrays taken out (eqx.partition)
    source: Identity = None  # the module, whose arrays ``init`` returns
    tuple_state: bool = False

    @property
    def name(self) -> str:
        return type(self.source.obj).__name__

    def example_carry(self):
        zero = jnp.zeros((self.hidden_size,))
        return (zero, zero) if self.tuple_state else zero

    def example_init(self, key):
        import equinox as eqx

        return eqx.partition(self.source.obj, eqx.is_inexact_array)[0]

    def example_step(self, params, carry, x):
        import equinox as eqx

        state = eqx.combine(params, self.static)(x, carry)
        return state, state[0] if self.tuple_state else state


def from_equinox(module) -> EquinoxCell:
    """An Equinox cell (``eqx.nn.GRUCell``, ``eqx.nn.LSTMCell``, or a user's module with ``input_size`` and
    ``hidden_size`` called as ``module(x, state) -> state``; the state is a vector, or a pair of vectors like
    ``LSTMCell``'s ``(h, c)``) as an ``rtrl`` cell; ``init`` returns the module's own arrays."""
    import equinox as eqx

    if not isinstance(module, eqx.Module) or not callable(module):
        raise ValueError(f"module must be an Equinox recurrent cell called as module(x, state), got a "
                         f"{type(module).__name__}")
    sizes = [getattr(module, name, None) for name in ("input_size", "hidden_size")]
    if not all(isinstance(n, int) for n in sizes):
        raise ValueError(f"module must have int input_size and hidden_size attributes, got {sizes}")
    static = eqx.partition(module, eqx.is_inexact_array)[1]
    return EquinoxCell(*sizes, static, Identity(module), isinstance(module, eqx.nn.LSTMCell))


class CellError(ValueError):
    """A cell named by its import path that cannot be built or used; ``option`` is the run option at fault
    (``"cell"``, or ``"cell_args"`` for an option the cell does not take), so the command line can name its flag."""

    def __init__(self, message: str, option: str = "cell"):
        super().__init__(message)
        self.option = option


# Modules whose cell classes a run folder's config.json may name without the user allowing it: importing them runs
# no one else's code, and building one of their cell classes calls only its constructor (rtrl.cells.* too).
TRUSTED_MODULES = ("flax.linen", "flax.nnx", "equinox", "equinox.nn")


ARRAY_LIKE = jax.Array | np.ndarray | np.generic | float | int  # what a parameter leaf may be


class NotArrays(Exception):
    """An adapter's init returned something other than arrays (raised while traced, turned into a TypeError)."""


def reason(error: Exception) -> str:
    """An exception in one line: its type and the first line of its message (some messages run to a page)."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def split_import_path(path: str) -> tuple[str, str]:
    module_name, sep, name = path.partition(":") if isinstance(path, str) else ("", "", "")
    if not sep or not module_name or not name:
        raise CellError(f"a cell's import path is 'module.path:Name', got {path!r}")
    return module_name, name


def load(path: str):
    """The object ``"module.path:Name"`` names (the module is imported: its code runs)."""
    import importlib

    module_name, name = split_import_path(path)
    try:
        return getattr(importlib.import_module(module_name), name)
    except Exception as e:  # ImportError, AttributeError, or whatever the module raises while it is imported
        raise CellError(f"cannot import the cell {path!r}: {reason(e)}") from None


def cell_factory(function):
    """Mark a function of ``rtrl.cells`` as a factory of cells that a run folder may name by its import path without
    the user allowing it (``rtrl.cells.network:lru_network``, which the results' presets name): rtrl's own code."""
    function.cell_factory = True
    return function


def is_trusted(path: str) -> bool:
    """Whether ``path`` names a cell class of ``rtrl.cells`` or of Flax's or Equinox's own modules, or a factory of
    ``rtrl.cells`` marked ``cell_factory``: what a run folder may name without the user allowing it (anything else
    would run code the folder's sender chose)."""
    module_name, _ = split_import_path(path)
    if module_name not in TRUSTED_MODULES and module_name != "rtrl.cells" and not module_name.startswith("rtrl.cells."):
        return False
    try:
        obj = load(path)
    except CellError:
        return False
    if getattr(obj, "cell_factory", False) is True and module_name.startswith("rtrl.cells"):
        return True
    return isinstance(obj, type) and (issubclass(obj, Cell) or framework_of(obj) is not None)


def from_import_path(path: str, *, input_size: int, hidden_size: int, **options) -> Cell:
    """The cell that ``"module.path:Name"`` names, built for ``input_size`` and ``hidden_size`` (how the command
    line takes a cell it does not register, e.g. ``--cell flax.linen:GRUCell``):

    * an ``rtrl`` cell class: ``Name(input_size, hidden_size, **options)``;
    * a ``flax.linen`` cell class: ``from_flax(Name(features=hidden_size, **options), input_size=input_size)``;
    * a ``flax.nnx`` cell class: ``from_nnx(Name(input_size, hidden_size, rngs=nnx.Rngs(0), **options))``;
    * an Equinox cell class: ``from_equinox(Name(input_size, hidden_size, key=PRNGKey(0), **options))``;
    * any other callable (a user's factory): ``Name(input_size, hidden_size, **options)``, which returns one of
      the above (an ``rtrl`` cell, or a Flax or Equinox cell instance).

    Whatever goes wrong (no such module or name, an object that is not a cell class or factory, an option it
    does not take, a constructor that raises, a cell of other sizes or whose step fails on one example) is a
    ``CellError`` naming the path and what was expected; the step is tried on shapes alone (``jax.eval_shape``).
    """
    obj = load(path)
    if not callable(obj):
        raise CellError(f"{path!r} is neither a cell class nor a factory of cells (it is a {type(obj).__name__})")
    kind = "cell" if isinstance(obj, type) and issubclass(obj, Cell) else (
        framework_of(obj) if isinstance(obj, type) else None) or "factory"
    check_options(obj, path, options, kind)
    try:
        made = build(obj, kind, input_size, hidden_size, options)
        cell = made if isinstance(made, Cell) else adapt(made, input_size) if framework_of(type(made)) else None
    except (Exception, SystemExit) as e:  # a user's constructor may raise anything, even exit
        with_options = f" with options {options}" if options else ""
        raise CellError(f"building the cell {path!r}{with_options} failed: {reason(e)}") from None
    if cell is None:
        raise CellError(f"{path!r} is neither a cell class nor a factory of cells: called as {path}(input_size, "
                        f"hidden_size) it returned a {type(made).__name__}, not an rtrl, Flax or Equinox cell")
    check_imported_cell(cell, path, input_size, hidden_size)
    return cell


def build(obj, kind: str, input_size: int, hidden_size: int, options: dict):
    if kind == "linen":
        return obj(features=hidden_size, **options)
    if kind == "nnx":
        return obj(input_size, hidden_size, rngs=nnx_rngs(), **options)
    if kind == "equinox":
        return obj(input_size, hidden_size, key=jax.random.PRNGKey(0), **options)
    return obj(input_size, hidden_size, **options)


def check_options(obj, path: str, options: dict, kind: str) -> None:
    """A ``CellError`` (``cell_args``) for an option that ``obj``'s signature does not take (none if it takes
    ``**kwargs`` or has no signature); the sizes, ``features``, ``rngs`` and ``key`` are ours to give."""
    import inspect

    try:
        parameters = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        return
    named = [p for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    ours = {"features"} if kind == "linen" else {p.name for p in named[:2]} | {"rngs", "key"}
    known = [p.name for p in named if p.name not in ours]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise CellError(f"cell {path!r} has no option {unknown}; its options are {known}", "cell_args")


def check_imported_cell(cell: Cell, path: str, input_size: int, hidden_size: int) -> None:
    """``cell`` has the sizes asked for, and ``init``, ``initial_carry`` and ``step`` work on one example and keep
    the carry's shape (tried on shapes alone); else a ``CellError`` saying what was expected."""
    if (cell.input_size, cell.hidden_size) != (input_size, hidden_size):
        raise CellError(f"the cell {path!r} must read inputs of size {input_size} (the task's) and have hidden size "
                        f"{hidden_size}, got input_size={cell.input_size}, hidden_size={cell.hidden_size}")
    try:
        params = jax.eval_shape(cell.init, jax.random.PRNGKey(0))
        carry = jax.eval_shape(lambda: cell.initial_carry(()))
        new, h = jax.eval_shape(cell.step, params, carry, jax.ShapeDtypeStruct((input_size,), default_dtype()))
    except Exception as e:  # an abstract base (NotImplementedError), a step of other shapes, ...
        raise CellError(f"the cell {path!r} cannot take a step (init, initial_carry and step on one example "
                        f"failed: {reason(e)})") from None
    if tuple(jnp.shape(h)) != (hidden_size,) or describe(new) != describe(carry):
        raise CellError(f"the cell {path!r} must step one example to (carry of {describe(carry)}, h of shape "
                        f"({hidden_size},)), got ({describe(new)}, {tuple(jnp.shape(h))})")


def framework_of(cls: type) -> str | None:
    """``"linen"``, ``"nnx"`` or ``"equinox"`` for a module class of that framework (looked up only if the
    framework is already imported: otherwise nothing can be one of its modules), else ``None``."""
    import sys

    checks = (("linen", "flax.linen", "Module"), ("nnx", "flax.nnx", "Module"), ("equinox", "equinox", "Module"))
    for name, module, base in checks:
        if module in sys.modules and issubclass(cls, getattr(sys.modules[module], base)):
            return name
    return None


def adapt(module, input_size: int) -> AdaptedCell:
    """A Flax or Equinox cell instance as an ``rtrl`` cell."""
    kind = framework_of(type(module))
    if kind == "linen":
        return from_flax(module, input_size=input_size)
    return from_nnx(module) if kind == "nnx" else from_equinox(module)


def nnx_rngs():
    from flax import nnx

    return nnx.Rngs(0)
