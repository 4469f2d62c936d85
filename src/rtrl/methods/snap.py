"""SnAp-n (Menick et al. 2020, "Practical real time recurrent learning with a sparse approximation").

Exact RTRL carries ``M = d carry / d params`` (C, P) with ``M' = J M + I`` (``J = d carry'/d carry``,
``I = d carry'/d params``, see ``rtrl.methods.dense``). SnAp-n keeps ``M`` on a fixed sparsity pattern only:
the entries that ``n`` steps of the connectivity reach from a parameter's immediate influence,

    pattern_1 = support(I),   pattern_{k+1} = pattern_k | support(J) pattern_k,
    M' = pattern_n * (J M + I),

and drops the rest at every step. SnAp-1 keeps, for each parameter, only the carry entries it touches within
one step (for ``Elman``: ``W_ij``, ``B_j``, ``R_ij`` -> ``h_j``; for ``GRU`` likewise, except that a reset-gate
parameter touches every ``h_k`` through ``(r * h) @ U_n``), so it is exact when the recurrence never moves a
sensitivity to another carry entry (element-wise cells whose neurons hold one state each).
SnAp-2 on a dense recurrence reaches every entry: the pattern is full and it is exact RTRL.

The supports come from the cell's own one-step Jacobians (``rtrl.methods.sparsity``), once per cell and
shapes; nothing is special-cased. Cost per example and step: the two Jacobians by reverse mode, O(C) VJPs of
a step (O(C P) time, an O(C P) transient), plus O(r^2 P) for the masked update, where ``r`` is the largest
number of kept carry entries per parameter (1 for SnAp-1 on Elman); the traces hold ``r P`` numbers (``C P``
for exact RTRL). A wide pattern (``4 r > C``, e.g. SnAp-1 on GRU) is stored densely and masked, and a full one
is plain RTRL: both cost what ``rtrl`` costs, O(C^2 P).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from rtrl.cells.base import check_positive_int
from rtrl.methods import sparsity
from rtrl.methods.base import TraceMethod
from rtrl.methods.dense import flat_step


@functools.lru_cache(maxsize=32)
def snap_pattern(cell, params_spec, carry_spec, n: int) -> sparsity.Pattern:
    immediate, recurrence = sparsity.jacobian_supports(cell, params_spec, carry_spec)
    return sparsity.compress(sparsity.reach(recurrence, immediate, n - 1))


@dataclasses.dataclass(frozen=True)
class SnAp(TraceMethod):
    """SnAp-``n``: sensitivities kept where ``n`` steps of the connectivity reach (``n`` >= 1)."""

    n: int = 1

    def __post_init__(self) -> None:
        check_positive_int("n", self.n)

    @property
    def name(self) -> str:
        return f"snap{self.n}"

    def pattern(self, cell, params, carry) -> sparsity.Pattern:
        return snap_pattern(cell, sparsity.spec(params), sparsity.spec(carry), self.n)

    def propagation(self, j_carry):
        """The part of the recurrence Jacobian the traces are carried by (all of it for SnAp)."""
        return j_carry

    def init(self, cell, params, carry):
        flat_p, _ = ravel_pytree(params)
        flat_c, _ = ravel_pytree(carry)
        return sparsity.zeros(self.pattern(cell, params, carry), jnp.result_type(flat_c, flat_p))

    def update(self, cell, params, carry, traces, x):
        f, flat_p, flat_c, _ = flat_step(cell, params, carry, x)
        j_params, j_carry = jax.jacrev(f, argnums=(0, 1))(flat_p, flat_c)
        return sparsity.update(self.pattern(cell, params, carry), self.propagation(j_carry), j_params, traces)

    def contract(self, cell, params, traces, g_carry):
        pattern = self.pattern(cell, params, g_carry)  # the credit has the carry's structure
        _, unravel_p = ravel_pytree(params)
        return unravel_p(sparsity.contract(pattern, traces, ravel_pytree(g_carry)[0]))
