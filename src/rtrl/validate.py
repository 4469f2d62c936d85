"""Checks at the Python API's boundary (``sequence_grad``, ``online``), so that bad input is a ``ValueError`` that
names the argument and what was expected, never an error from deep inside a trace.

Everything checked is static (tree structure, shapes, dtypes), so the checks cost nothing at run time under
``jit``: they run once, while tracing. Integer and boolean inputs are cast to the parameters' floating dtype,
which is what BPTT's type promotion does, so every method accepts them alike (the custom backward pass of the
online step could not give an integer input a gradient).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


def describe(tree) -> dict[str, tuple]:
    """``{tree path: shape}`` of every leaf."""
    return {jax.tree_util.keystr(path): tuple(jnp.shape(leaf))
            for path, leaf in jax.tree_util.tree_leaves_with_path(tree)}


def expected_params(cell):
    """The shapes of ``cell.init``'s parameters (memoised per cell: cells are immutable)."""
    try:
        return _expected_params(cell)
    except TypeError:  # an unhashable cell: work it out each time
        return describe(jax.eval_shape(cell.init, jax.random.PRNGKey(0)))


@functools.lru_cache(maxsize=64)
def _expected_params(cell):
    return describe(jax.eval_shape(cell.init, jax.random.PRNGKey(0)))


def same_tree(name: str, got: dict, want: dict, owner: str) -> None:
    missing, extra = [p for p in want if p not in got], [p for p in got if p not in want]
    if missing or extra:
        def listed(paths):
            return ", ".join(p or "a bare array" for p in paths)

        parts = [f"missing {listed(missing)}" if missing else "", f"unexpected {listed(extra)}" if extra else ""]
        raise ValueError(f"{name} do not fit {owner} ({'; '.join(p for p in parts if p)}); expected "
                         f"{listed(want)}")
    for path, shape in want.items():
        if got[path] != shape:
            raise ValueError(f"{name}{path} of {owner} must have shape {shape}, got {got[path]}")


def check_params(cell, params) -> None:
    """``params`` must have the tree, shapes and a floating dtype of ``cell.init``'s."""
    same_tree("params", describe(params), expected_params(cell), cell.name)
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        if not jnp.issubdtype(jnp.result_type(leaf), jnp.inexact):
            raise ValueError(f"params{jax.tree_util.keystr(path)} of {cell.name} must be floating-point, got "
                             f"{jnp.result_type(leaf)}")


def as_input(x, params):
    """``x`` as an array; integer or boolean inputs cast to the parameters' floating dtype (as BPTT promotes)."""
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = x.astype(jnp.result_type(*jax.tree.leaves(params)))
    return x


def check_carry(cell, carry, batch_shape, dtype) -> None:
    want = describe(jax.eval_shape(lambda: cell.initial_carry(tuple(batch_shape), dtype)))
    same_tree("carry", describe(carry), want, f"{cell.name} with batch shape {tuple(batch_shape)}")


def sequence(cell, params, xs, targets, loss_fn, carry):
    """``sequence_grad``'s arguments checked; ``xs`` cast as ``as_input`` does. ``loss_fn`` must return a scalar."""
    check_params(cell, params)
    xs = as_input(xs, params)
    dtype = jnp.result_type(xs, *jax.tree.leaves(params))
    if carry is not None:
        check_carry(cell, carry, jnp.shape(xs)[1:-1], dtype)
    else:
        carry = jax.eval_shape(lambda: cell.initial_carry(jnp.shape(xs)[1:-1], dtype))
    h = jax.eval_shape(lambda p, c, x: cell.step(p, c, x)[1], params, carry, xs[0])
    loss = jax.eval_shape(loss_fn, h, jax.tree.map(lambda a: a[0], targets))
    if jnp.shape(loss) != ():
        raise ValueError(f"loss_fn must return a scalar (sum over the batch), got shape {jnp.shape(loss)}")
    return xs


def online(cell, init, step):
    """The learner's ``init`` and ``step`` with their parameters checked and their inputs cast."""

    def checked_init(params, batch_shape=(), carry=None):
        check_params(cell, params)
        if carry is not None:
            leaves = jax.tree.leaves(carry)
            batch = jnp.shape(leaves[0])[:-1] if leaves else ()
            check_carry(cell, carry, batch, jnp.result_type(*jax.tree.leaves(params)))
        return init(params, batch_shape, carry)

    def checked_step(params, state, x):
        check_params(cell, params)
        return step(params, state, as_input(x, params))

    return checked_init, checked_step
