"""Structure discovery: what a cell's step can reach, read from its jaxpr or probed, outside the traced computation.

Every trace method asks the same few questions of a cell's step, and this module answers them once:

* ``structural_dependencies(fn, *args)``: which inputs each output of ``fn`` can depend on, from its jaxpr
  (structural, so exact; conservative through nested calls). The online step uses it to find the carry leaves
  that ``output`` reads; ``diagonal`` to find which parameters reach which carry leaves.
* ``jacobian_supports(cell, ...)``: the supports of the one-step Jacobians ``I = d carry'/d params`` (C, P) and
  ``J = d carry'/d carry`` (C, C), probed at ``PROBES`` random points (an entry that vanishes at every probe,
  e.g. a relu unit inactive at all of them, chance ``2**-PROBES``, counts as zero). SnAp's patterns come from it.
* ``couples_neurons(fn, inputs)``: whether an element-wise-looking function lets neuron 0 reach another neuron.
* ``flat_step(cell, params, carry, x)``: the carry update as a function of flat vectors, for the methods that
  carry matrices over the flattened carry and parameters (dense RTRL, SnAp, e-prop, UORO).

And one policy: a credit leaf ``None`` means *no credit on that carry leaf*. The online step passes ``None``
for the leaves that ``output`` does not read (``unread_as_none``); a method either skips those leaves' traces
or, when it works on the flattened carry, reads them as zeros through ``flat_credit``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.extend.core import Literal
from jax.flatten_util import ravel_pytree

PROBES = 32


# -- jaxpr dependencies ---------------------------------------------------------------------------------------
def structural_dependencies(fn: Callable, *args) -> list[frozenset[int]]:
    """For each output leaf of ``fn(*args)``, the positional arguments it can depend on, read from its jaxpr
    (conservative: a nested call depends on all of its inputs). ``args`` may be arrays or shape structs."""
    jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
    deps = {v: frozenset([i]) for i, v in enumerate(jaxpr.invars)}

    def of(v):
        return frozenset() if isinstance(v, Literal) else deps.get(v, frozenset())

    for eqn in jaxpr.eqns:
        d = frozenset().union(*(of(v) for v in eqn.invars))
        deps.update({v: d for v in eqn.outvars})
    return [of(v) for v in jaxpr.outvars]


def leaf_names(tree) -> list[str]:
    """A readable name per leaf (``"y1"``, ``"0/c"``; ``"carry"`` for a bare array)."""
    paths = jax.tree_util.tree_flatten_with_path(tree)[0]
    return [jax.tree_util.keystr(path, simple=True, separator="/") or "carry" for path, _ in paths]


# -- the credit policy ----------------------------------------------------------------------------------------
def unread_as_none(output: Callable, g_carry):
    """``g_carry`` with ``None`` for the leaves that ``output(carry)`` does not read (found in its jaxpr): their
    credit is zero, so a method may skip their traces instead of multiplying them by zeros."""
    leaves, tree = jax.tree.flatten(g_carry)
    read = set().union(*structural_dependencies(lambda *c: output(jax.tree.unflatten(tree, c)), *leaves))
    return jax.tree.unflatten(tree, [g if i in read else None for i, g in enumerate(leaves)])


def credit_leaves(g_carry) -> list:
    """The leaves of a credit, ``None`` (no credit) included, in the carry's leaf order."""
    return jax.tree.leaves(g_carry, is_leaf=lambda a: a is None)


def flat_credit(g_carry, carry_like) -> jax.Array:
    """The credit as one flat vector in ``ravel_pytree(carry_like)``'s order, a ``None`` leaf read as zeros."""
    like, tree = jax.tree.flatten(carry_like)
    leaves = [jnp.zeros_like(t) if g is None else g for t, g in zip(like, credit_leaves(g_carry), strict=True)]
    return ravel_pytree(jax.tree.unflatten(tree, leaves))[0]


# -- the flattened step ---------------------------------------------------------------------------------------
def flat_step(cell, params, carry, x):
    """``(f, p, c, unravel_params)``: the carry update ``c' = f(p, c)`` over flat vectors at input ``x``."""
    flat_p, unravel_p = ravel_pytree(params)
    flat_c, unravel_c = ravel_pytree(carry)

    def f(p, c):
        return ravel_pytree(cell.step(unravel_p(p), unravel_c(c), x)[0])[0]

    return f, flat_p, flat_c, unravel_p


def step_jacobians(cell, params, carry, x) -> tuple[jax.Array, jax.Array]:
    """``(I, J)``: ``d carry'/d params`` (C, P) and ``d carry'/d carry`` (C, C) of one step, flattened, by
    reverse mode (a step has fewer outputs, C, than parameters, P)."""
    f, flat_p, flat_c, _ = flat_step(cell, params, carry, x)
    return jax.jacrev(f, argnums=(0, 1))(flat_p, flat_c)


# -- probing --------------------------------------------------------------------------------------------------
def spec(tree):
    """A hashable description of a pytree's structure and shapes (static under jit); supports ignore dtypes."""
    leaves, treedef = jax.tree.flatten(tree)
    return treedef, tuple(tuple(jnp.shape(a)) for a in leaves)


def probe_point(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    """A fixed random point (uniform in (-1, 1)) of the given shapes, drawn with NumPy: no compilation."""
    rng = np.random.default_rng(0)
    dtype = jnp.zeros(()).dtype
    return [rng.uniform(-1, 1, shape).astype(dtype) for shape in shapes]


def couples_neurons(fn: Callable, inputs) -> bool:
    """Whether ``fn`` (``(N,)`` arrays to ``(N,)`` arrays) lets neuron 0 of its inputs reach another neuron, at
    the point ``inputs``: one ``jvp`` whose tangent is random at neuron 0 of every input and zero elsewhere
    (evaluated at once, also when called under ``jit``; a non-finite tangent counts as no evidence)."""
    tangents = [np.zeros_like(a) for a in inputs]
    for t, value in zip(tangents, probe_point(*[()] * len(inputs)), strict=True):
        t[0] = value

    def reaches_other_neurons(inputs, tangents):
        out = jax.jvp(fn, tuple(inputs), tuple(tangents))[1]
        return jnp.any(jnp.stack([jnp.any(jnp.where(jnp.isfinite(t), t, 0)[1:] != 0) for t in out]))

    with jax.ensure_compile_time_eval():
        return bool(jax.jit(reaches_other_neurons)(inputs, tangents))


@functools.lru_cache(maxsize=32)
def jacobian_supports(cell, params_spec, carry_spec) -> tuple[np.ndarray, np.ndarray]:
    """Supports of the immediate (C, P) and recurrence (C, C) Jacobians of ``cell.step`` for one example, probed
    at ``PROBES`` random points in the widest float JAX allows, at a scale that keeps pre-activations O(1)."""
    dtype = jax.dtypes.canonicalize_dtype(np.float64)
    (p_def, p_shapes), (c_def, c_shapes) = params_spec, carry_spec
    shapes = [*p_shapes, *c_shapes, (cell.input_size,)]
    # Pre-activations are sums of up to max(size) products of two probe values: keep their variance ~1.
    scale = max(int(np.prod(s)) for s in shapes) ** -0.25
    rng = np.random.default_rng(0)
    probes = [(scale * rng.standard_normal((PROBES, *s))).astype(dtype) for s in shapes]

    def abs_jacobians(leaves):
        params = jax.tree.unflatten(p_def, leaves[: len(p_shapes)])
        carry = jax.tree.unflatten(c_def, leaves[len(p_shapes): -1])
        return jax.tree.map(jnp.abs, step_jacobians(cell, params, carry, leaves[-1]))

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
