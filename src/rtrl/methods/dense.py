"""Exact RTRL for any cell: the dense sensitivity ``M = d carry / d params`` carried forward.

With the carry and the parameters flattened to vectors ``c`` (C,) and ``p`` (P,), one step
``c' = f(p, c, x)`` gives ``M' = (df/dc) M + df/dp`` (C, P). The two immediate Jacobians are those of a single
step, taken by reverse mode because a step has fewer outputs (C) than parameters (P); nothing is stored
across steps. Cost per example and step: O(C^2 P) time, O(C P) memory, i.e. O(N^4) and O(N^3) for a dense
recurrence of width N.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from rtrl.methods.base import TraceMethod


def flat_step(cell, params, carry, x):
    """The carry update as a function of flat vectors, with the unravelling of parameters."""
    flat_p, unravel_p = ravel_pytree(params)
    flat_c, unravel_c = ravel_pytree(carry)

    def f(p, c):
        return ravel_pytree(cell.step(unravel_p(p), unravel_c(c), x)[0])[0]

    return f, flat_p, flat_c, unravel_p


class DenseRTRL(TraceMethod):
    name = "rtrl"
    exact = True

    def init(self, cell, params, carry):
        flat_p, _ = ravel_pytree(params)
        flat_c, _ = ravel_pytree(carry)
        return jnp.zeros((flat_c.size, flat_p.size), jnp.result_type(flat_c, flat_p))

    def update(self, cell, params, carry, traces, x):
        f, flat_p, flat_c, _ = flat_step(cell, params, carry, x)
        j_params, j_carry = jax.jacrev(f, argnums=(0, 1))(flat_p, flat_c)
        return j_carry @ traces + j_params

    def contract(self, cell, params, traces, g_carry):
        _, unravel_p = ravel_pytree(params)
        template, tree = jax.tree.flatten(cell.initial_carry((), traces.dtype))
        credit = [jnp.zeros_like(t) if g is None else g  # None: no credit on that leaf
                  for t, g in zip(template, jax.tree.leaves(g_carry, is_leaf=lambda a: a is None), strict=True)]
        return unravel_p(ravel_pytree(jax.tree.unflatten(tree, credit))[0] @ traces)
