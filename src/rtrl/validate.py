"""Checks at the Python API's boundary (``sequence_grad``, ``online``, ``stream_grad``, ``inspect``, the cells),
so that bad input is an error that names the argument and what was expected, never an error from deep inside a
trace.

Everything checked is static (types, tree structure, shapes, dtypes), so the checks cost nothing at run time
under ``jit``: they run once, while tracing, and never look at an array's values.

Dtypes follow one rule for every method, BPTT's type promotion: the computation runs in the promoted dtype of the
parameters, the inputs and the carry (``compute_dtype``; an integer or boolean input promotes to the parameters'
floating dtype), the parameters are cast to it by a differentiable cast, so each gradient comes back in its own
parameter's dtype (float16 parameters, float32 inputs: float32 arithmetic, float16 gradients). An online state is
made in that dtype by ``learner.init`` and keeps it; an input that would widen it is refused, since the next state
would then change dtype (which no ``lax.scan`` accepts).
"""

from __future__ import annotations

import abc
import difflib
import functools
import operator

import jax
import jax.numpy as jnp
import numpy as np


def describe(tree) -> dict[str, tuple]:
    """``{tree path: shape}`` of every leaf."""
    return {jax.tree_util.keystr(path): tuple(jnp.shape(leaf))
            for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}


def shown(tree) -> str:
    """Each leaf of ``tree`` as its dtype and shape, ``float32(2, 4)``."""
    return str(jax.tree.map(lambda a: f"{jnp.result_type(a).name}{tuple(jnp.shape(a))}", tree))


def what(value) -> str:
    """A short description of a value for an error message: ``the string 'elman'``, ``the class Elman``,
    ``int 3``."""
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def closest(name: str, names) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``names`` to a misspelt ``name``, else ``""``."""
    found = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f"; did you mean {found[0]!r}?" if found else ""


def applies(method, cell) -> bool:
    """Whether ``method`` applies to ``cell`` (its ``check`` passes)."""
    try:
        method.check(cell)
    except ValueError:
        return False
    return True


class CellInterface(abc.ABC):  # noqa: B024 (no abstract method: a class to register, not to subclass)
    """What ``check_cell`` accepts: ``rtrl.cells.Cell`` registers itself here (``CellInterface.register``), so this
    layer checks a cell without importing the cells above it."""


def check_cell(cell) -> None:
    """``cell`` must be a cell object (an instance of ``rtrl.cells.Cell``), not a name or a class."""
    if isinstance(cell, CellInterface):
        return
    hint = ""
    if isinstance(cell, type) and issubclass(cell, CellInterface):
        hint = f": make one with its sizes, e.g. {cell.__name__}(input_size, hidden_size)"
    raise TypeError(f"cell must be a cell object such as rtrl.cells.Elman(...), got {what(cell)}{hint}")


def as_batch_shape(batch_shape) -> tuple[int, ...]:
    """``batch_shape`` as a tuple of non-negative ints; one int ``n`` is ``(n,)``, as numpy and JAX read a shape."""
    sizes = tuple(batch_shape) if isinstance(batch_shape, tuple | list) else (batch_shape,)
    if not all(hasattr(n, "__index__") and not isinstance(n, bool) and operator.index(n) >= 0 for n in sizes):
        raise ValueError(f"batch_shape must be a tuple of non-negative ints (or one int), got {batch_shape!r}")
    return tuple(operator.index(n) for n in sizes)


def check_key(key) -> None:
    """``key`` must be a JAX random key: ``jax.random.key(0)`` or a raw ``jax.random.PRNGKey(0)`` (uint32)."""
    dtype = getattr(key, "dtype", None)
    if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key) and jnp.ndim(key) == 0:
        return
    if dtype == jnp.uint32 and jnp.ndim(key) == 1:
        return
    raise TypeError(f"key must be a JAX random key such as jax.random.PRNGKey(0) or jax.random.key(0), got "
                    f"{what(key) if dtype is None else f'an array of {dtype} {tuple(jnp.shape(key))}'}")


def expected_params(cell):
    """The shapes of ``cell.init``'s parameters (memoised per cell: cells are immutable)."""
    try:
        return _expected_params(cell)
    except TypeError:  # an unhashable cell: work it out each time
        return describe(jax.eval_shape(cell.init, jax.random.PRNGKey(0)))


@functools.lru_cache(maxsize=64)
def _expected_params(cell):
    return describe(jax.eval_shape(cell.init, jax.random.PRNGKey(0)))


def same_tree(name: str, got: dict, want: dict, owner: str, verb: str = "do") -> None:
    missing, extra = [p for p in want if p not in got], [p for p in got if p not in want]
    if missing or extra:
        def listed(paths):
            return ", ".join(p or "a bare array" for p in paths)

        parts = [f"missing {listed(missing)}" if missing else "", f"unexpected {listed(extra)}" if extra else ""]
        raise ValueError(f"{name} {verb} not fit {owner} ({'; '.join(p for p in parts if p)}); expected "
                         f"{listed(want)}")
    for path, shape in want.items():
        if got[path] != shape:
            raise ValueError(f"{name}{path} of {owner} must have shape {shape}, got {got[path]}")


def check_params(cell, params) -> None:
    """``params`` must have the tree, shapes and a floating dtype of ``cell.init``'s."""
    same_tree("params", describe(params), expected_params(cell), cell.name)
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        if not jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
            raise ValueError(f"params{jax.tree_util.keystr(path)} of {cell.name} must be floating-point (real), got "
                             f"{jnp.result_type(leaf)}")


def compute_dtype(*trees):
    """The promoted dtype of every leaf of ``trees`` (BPTT's type promotion): the dtype the step computes in."""
    return jnp.result_type(*(leaf for tree in trees for leaf in jax.tree.leaves(tree)))


def cast(tree, dtype):
    """Every leaf of ``tree`` in ``dtype`` (a no-op on leaves already in it; differentiable)."""
    return jax.tree.map(lambda a: jnp.asarray(a).astype(dtype), tree)


def like(tree, reference):
    """Every leaf of ``tree`` in the dtype of the matching leaf of ``reference`` (gradients in their parameters'
    dtype)."""
    return jax.tree.map(lambda a, r: a.astype(jnp.result_type(r)), tree, reference)


def check_carry(cell, carry, batch_shape, dtype) -> None:
    """``carry`` must have the tree and shapes of ``cell.initial_carry(batch_shape)``, in a floating dtype (a
    carry is differentiated: an integer one would be silently rounded)."""
    want = describe(jax.eval_shape(lambda: cell.initial_carry(tuple(batch_shape), dtype)))
    same_tree("carry", describe(carry), want, f"{cell.name} with batch shape {tuple(batch_shape)}")
    for path, leaf in jax.tree_util.tree_leaves_with_path(carry):
        if not jnp.issubdtype(jnp.result_type(leaf), jnp.inexact):
            raise ValueError(f"carry{jax.tree_util.keystr(path)} of {cell.name} must be floating-point, got "
                             f"{jnp.result_type(leaf)}: make it with cell.initial_carry(batch_shape, dtype)")


def traced(cell, dtype, fn, *args):
    """``jax.eval_shape(fn, *args)``; where it fails in a half-precision ``dtype`` (complex arithmetic has no
    float16), a ``TypeError`` saying that ``cell`` cannot compute in it, instead of the error from deep inside."""
    try:
        return jax.eval_shape(fn, *args)
    except TypeError as e:
        if jnp.dtype(dtype).itemsize > 2:
            raise
        raise TypeError(f"{cell.name} cannot compute in {jnp.dtype(dtype).name} ({str(e).splitlines()[0]}); use "
                        "float32 or float64 parameters and inputs") from None


def check_sequence(cell, xs, targets) -> None:
    """``xs`` is ``(T, *batch, input_size)`` with ``T >= 1`` and every leaf of ``targets`` leads with ``T`` (numpy's
    shape functions: they read arrays and tracers, and nested lists too)."""
    if np.ndim(xs) < 2:
        raise ValueError(f"xs must have shape (T, *batch, input_size), got shape {np.shape(xs)}")
    if np.shape(xs)[-1] != cell.input_size:
        raise ValueError(
            f"xs must end in input_size={cell.input_size} for {cell.name}, got shape {np.shape(xs)}"
        )
    T = np.shape(xs)[0]
    if T == 0:
        raise ValueError("xs must hold at least one time step (T >= 1), got T = 0")
    for leaf in jax.tree.leaves(targets):
        if np.ndim(leaf) < 1 or np.shape(leaf)[0] != T:
            raise ValueError(f"targets must have leading dimension T = {T} like xs, got shape {np.shape(leaf)}")
    check_finite("xs", xs)


def check_finite(name: str, value) -> None:
    """``value`` (an array, or nested lists) holds no NaN or infinity: one would make every later state and gradient
    NaN, or, through a spike's threshold, silently no spike at all. Checked where the value is concrete (the API's
    boundary); a traced value (inside the caller's ``jit``) is the caller's to check."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(value)):
        return
    array = np.asarray(value)  # on the host: no JAX operation, so nothing is traced inside a caller's trace
    if not jnp.issubdtype(array.dtype, jnp.inexact):
        return
    array = array.astype(np.complex128 if jnp.issubdtype(array.dtype, jnp.complexfloating) else np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        where = tuple(int(i[0]) for i in np.nonzero(bad))
        raise ValueError(f"{name} holds NaN or infinite values (the first at index {where}: {array[where]})")


def check_loss(loss_fn, h, target):
    """``loss_fn(h, target)`` must be a function returning a real floating-point scalar; its shape and dtype."""
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be a function (h, target) -> scalar loss, got {what(loss_fn)}")
    try:
        loss = jax.eval_shape(loss_fn, h, target)
    except TypeError as e:  # a loss of another signature, or targets it cannot take: say which call failed
        raise TypeError(f"loss_fn(h, target) failed on h {shown(h)} and target {shown(target)}: {e}") from e
    if not isinstance(loss, jax.ShapeDtypeStruct) or loss.shape != ():
        got = f"shape {loss.shape}" if isinstance(loss, jax.ShapeDtypeStruct) else f"{type(loss).__name__}"
        raise ValueError(f"loss_fn must return a scalar (sum over the batch), got {got}")
    if not jnp.issubdtype(loss.dtype, jnp.floating):
        raise ValueError(f"loss_fn must return a real floating-point scalar, got {loss.dtype} (take the real part, "
                         "or cast it to a float)")
    return loss


def sequence(cell, params, xs, targets, loss_fn, carry):
    """``sequence_grad``'s arguments checked; ``xs`` and the carry (made when ``None``) in the computation's
    dtype, which the parameters promote with them to."""
    check_sequence(cell, xs, targets)
    check_params(cell, params)
    xs = jnp.asarray(xs)  # nested lists too: one array, not a tree of scalars
    dtype = compute_dtype(params, xs, carry)
    xs = cast(xs, dtype)
    if carry is not None:
        check_carry(cell, carry, jnp.shape(xs)[1:-1], dtype)
        carry = cast(carry, dtype)
    else:
        carry = cell.initial_carry(jnp.shape(xs)[1:-1], dtype)
    h = traced(cell, dtype, cell.step, abstract(params, dtype), abstract(carry), abstract(xs[0]))[1]
    check_loss(loss_fn, h, jax.tree.map(lambda a: a[0], targets))
    return xs, carry


def abstract(tree, dtype=None):
    """Every leaf's shape and dtype (``dtype`` if given), without its values (a tracer's too)."""
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(jnp.shape(a), dtype or jnp.result_type(a)), tree)


def shapes_and_dtypes(tree) -> dict[str, tuple]:
    return {jax.tree_util.keystr(path): (tuple(jnp.shape(leaf)), jnp.result_type(leaf).name)
            for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}


def first_difference(got: dict, want: dict) -> str:
    """The first way a ``{path: (shape, dtype)}`` description differs from the expected one, or ``""``."""
    missing, extra = [p for p in want if p not in got], [p for p in got if p not in want]
    if missing or extra:
        return "; ".join(f"{word} {', '.join('state' + p for p in paths)}"
                         for word, paths in (("missing", missing), ("unexpected", extra)) if paths)
    for path, (shape, kind) in want.items():
        if got[path] != (shape, kind):
            return f"state{path} is {got[path][1]} {got[path][0]}, expected {kind} {shape}"
    return ""


def online(cell, method, init, step, state_type):
    """The learner's ``init`` and ``step`` with their arguments checked and cast by the dtype rule above."""

    def checked_init(params, batch_shape=(), carry=None):
        check_params(cell, params)
        batch_shape = as_batch_shape(batch_shape)
        dtype = compute_dtype(params, carry)
        if carry is not None:
            leaves = jax.tree.leaves(carry)
            carry_batch = tuple(jnp.shape(leaves[0])[:-1]) if leaves else ()
            if batch_shape not in ((), carry_batch):
                raise ValueError(f"batch_shape {batch_shape} contradicts the carry's batch shape {carry_batch}; leave "
                                 "batch_shape out when a carry is given")
            batch_shape = carry_batch
            check_carry(cell, carry, batch_shape, dtype)
            carry = cast(carry, dtype)
        expected_state(params, tuple(batch_shape), jnp.dtype(dtype).name)  # the cell can compute in dtype
        return init(cast(params, dtype), batch_shape, carry)

    made = {}  # (batch shape, dtype) -> what init makes: a step outside jit checks its state every call

    def expected_state(params, batch_shape, dtype):
        """What ``init`` makes (after checking that the step can be traced in ``dtype``)."""
        if (batch_shape, dtype) not in made:
            params = abstract(params, dtype)
            carry = jax.eval_shape(lambda: cell.initial_carry(batch_shape, dtype))
            state = traced(cell, dtype, lambda p, c: init(p, batch_shape, c), params, carry)
            traced(cell, dtype, step, params, state, jax.ShapeDtypeStruct((*batch_shape, cell.input_size), dtype))
            made[batch_shape, dtype] = shapes_and_dtypes(state)
        return made[batch_shape, dtype]

    def checked_state(params, state, x):
        """``state`` must be what this learner's ``init`` made for ``x``'s batch shape; the dtype to compute in."""
        owner = f"this learner ({cell.name} under {method.name!r})"
        if not isinstance(state, state_type):
            raise TypeError(f"state must be the OnlineState that learner.init(params, batch_shape) returns, got "
                            f"{what(state)}")
        carry = jax.tree.leaves(state.carry)
        batch_shape = tuple(jnp.shape(carry[0])[:-1]) if carry else ()
        if tuple(jnp.shape(x)[:-1]) != batch_shape:
            raise ValueError(f"x has batch shape {tuple(jnp.shape(x)[:-1])} but the state was made for batch shape "
                             f"{batch_shape}: give x of shape {batch_shape + (cell.input_size,)}, or make the state "
                             f"with learner.init(params, batch_shape={tuple(jnp.shape(x)[:-1])})")
        dtype = compute_dtype(params, state.carry)
        narrow = {a.dtype.name for a in carry} - {jnp.dtype(dtype).name}
        if narrow:
            raise ValueError(f"the state holds {', '.join(sorted(narrow))}, but the parameters compute in {dtype}: the "
                             f"next state would change dtype. Make the state from these parameters (learner.init("
                             f"params, batch_shape)), or give the parameters in the state's dtype")
        want = expected_state(params, batch_shape, jnp.dtype(dtype).name)
        difference = first_difference(shapes_and_dtypes(state), want)
        if difference:
            raise ValueError(f"state does not fit {owner} with batch shape {batch_shape} ({difference}): was it made "
                             f"by another learner, method or cell? Make it with learner.init(params, batch_shape)")
        widened = compute_dtype(params, state.carry, jnp.zeros((), jnp.result_type(x)))
        if widened != dtype:
            raise ValueError(
                f"x is {jnp.result_type(x)}, wider than the state's {dtype} (made from the parameters' dtype): the "
                f"next state would change dtype. Give x as {dtype}, or make the state in {widened}: "
                f"learner.init(params, carry=cell.initial_carry({batch_shape}, jnp.{widened}))")
        return dtype

    def checked_step(params, state, x):
        check_params(cell, params)
        x = jnp.asarray(x)
        cell.check_input(x)
        dtype = checked_state(params, state, x)
        return step(cast(params, dtype), state, cast(x, dtype))

    return checked_init, checked_step
