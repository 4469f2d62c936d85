"""Structural sparsity of a cell's one-step Jacobians, and sensitivities stored on a sparsity pattern.

With the carry and the parameters flattened (``c`` (C,), ``p`` (P,)), a step ``c' = f(p, c, x)`` has the
immediate Jacobian ``I = df/dp`` (C, P) and the recurrence Jacobian ``J = df/dc`` (C, C). Their *supports*
(entries that are not identically zero) are estimated once per cell and shapes, outside the traced
computation: an entry is structural when it is non-zero at any of ``PROBES`` random points (parameters,
carry and input drawn at a scale that keeps pre-activations O(1), in the widest float JAX allows). An entry
that vanishes at every probe (e.g. a relu unit inactive at all of them, chance 2**-PROBES) counts as zero.

A sensitivity ``M`` kept on a *pattern* (boolean C x P) is stored column-compressed when the pattern is
narrow: ``rows[a, q]`` (r, P) lists the carry entries kept for parameter ``q`` (padded; ``valid`` marks the
real ones), ``r`` being the largest column count, and ``M`` is the ``(r, P)`` array of its values there. A
wide pattern (``4 r > C``) is stored densely, ``(C, P)`` with zeros off the pattern.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

PROBES = 32


class Pattern(NamedTuple):
    mask: np.ndarray  # (C, P) bool, the kept entries
    rows: np.ndarray  # (r, P) int, the kept carry entries of each parameter, padded
    valid: np.ndarray  # (r, P) bool, False on padding

    @property
    def compressed(self) -> bool:
        """Stored as (r, P) values when that saves much; else densely (C, P), masked."""
        return 4 * self.rows.shape[0] <= self.mask.shape[0]


def spec(tree):
    """A hashable description of a pytree's structure and shapes (static under jit); supports ignore dtypes."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple(tuple(jnp.shape(a)) for a in leaves)


@functools.lru_cache(maxsize=32)
def jacobian_supports(cell, params_spec, carry_spec) -> tuple[np.ndarray, np.ndarray]:
    """Supports of the immediate (C, P) and recurrence (C, C) Jacobians of ``cell.step`` for one example."""
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    (p_def, p_shapes), (c_def, c_shapes) = params_spec, carry_spec
    shapes = [*p_shapes, *c_shapes, (cell.input_size,)]
    # Pre-activations are sums of up to max(size) products of two probe values: keep their variance ~1.
    scale = max(int(np.prod(s)) for s in shapes) ** -0.25
    rng = np.random.default_rng(0)
    probes = [(scale * rng.standard_normal((PROBES, *s))).astype(dtype) for s in shapes]

    def abs_jacobians(leaves):
        flat_p, unravel_p = ravel_pytree(jax.tree.unflatten(p_def, leaves[: len(p_shapes)]))
        flat_c, unravel_c = ravel_pytree(jax.tree.unflatten(c_def, leaves[len(p_shapes): -1]))

        def f(p, c):
            return ravel_pytree(cell.step(unravel_p(p), unravel_c(c), leaves[-1])[0])[0]

        return jax.tree.map(jnp.abs, jax.jacrev(f, argnums=(0, 1))(flat_p, flat_c))

    @jax.jit
    def total(probes):  # a loop, not a vmap: one probe's Jacobians in memory at a time
        def add(i, acc):
            return jax.tree.map(jnp.add, acc, abs_jacobians([a[i] for a in probes]))

        zero = jax.tree.map(jnp.zeros_like, jax.eval_shape(abs_jacobians, [a[0] for a in probes]))
        return lax.fori_loop(0, PROBES, add, zero)

    with jax.ensure_compile_time_eval():  # concrete even when called while tracing a method
        immediate, recurrence = total(probes)
    return np.asarray(immediate) > 0, np.asarray(recurrence) > 0


def reach(recurrence: np.ndarray, pattern: np.ndarray, steps: int) -> np.ndarray:
    """The entries that ``steps`` more steps of the connectivity ``recurrence`` (C, C) carry ``pattern`` to."""
    recurrence = recurrence.astype(np.float32)
    for _ in range(steps):
        pattern = pattern | (recurrence @ pattern.astype(np.float32) > 0)
    return pattern


def compress(mask: np.ndarray) -> Pattern:
    """A boolean (C, P) pattern with its column-compressed form."""
    r = max(int(mask.sum(axis=0).max()), 1)
    rows = np.argsort(~mask, axis=0, kind="stable")[:r]  # kept rows first, in order
    return Pattern(mask, rows, np.take_along_axis(mask, rows, axis=0))


def zeros(pattern: Pattern, dtype):
    return jnp.zeros(pattern.rows.shape if pattern.compressed else pattern.mask.shape, dtype)


def update(pattern: Pattern, j_carry, j_params, values):
    """``mask * (J M + I)``, for ``M`` zero off the pattern and stored as ``values``.

    Compressed: ``(J M)[rows[a, q], q] = sum_b J[rows[a, q], rows[b, q]] values[b, q]``, O(r^2 P) time and
    O(r P) memory besides the Jacobians; dense: one (C, C) x (C, P) product, O(C^2 P)."""
    if not pattern.compressed:
        new = j_carry @ values + j_params
        return new if pattern.mask.all() else jnp.where(jnp.asarray(pattern.mask), new, 0)
    rows = jnp.asarray(pattern.rows)
    immediate = jnp.take_along_axis(j_params, rows, axis=0)

    def add_row(b, acc):
        return acc + j_carry[rows, rows[b]] * values[b]

    propagated = lax.fori_loop(0, rows.shape[0], add_row, jnp.zeros_like(values))
    return jnp.where(jnp.asarray(pattern.valid), propagated + immediate, 0)


def contract(pattern: Pattern, values, g_carry):
    """``g^T M`` for ``M`` stored as ``values``: compressed, ``sum_a g[rows[a, q]] values[a, q]``."""
    if not pattern.compressed:
        return g_carry @ values
    return jnp.sum(g_carry[jnp.asarray(pattern.rows)] * values, axis=0)
