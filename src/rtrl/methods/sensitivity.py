"""The sensitivity ``M = d carry / d params`` carried forward on a pattern: exact RTRL and SnAp-n.

With the carry and the parameters flattened to vectors ``c`` (C,) and ``p`` (P,), one step ``c' = f(p, c, x)``
has the immediate Jacobian ``I = df/dp`` (C, P) and the recurrence Jacobian ``J = df/dc`` (C, C), both of a
single step (``rtrl.structure.step_jacobians``; nothing is stored across steps), and

    M' = pattern * (J M + I),        dL/dp = g^T M   for a credit g (C,) on the carry M describes.

* **Exact RTRL** (``rtrl``, ``DenseRTRL``) is the special case of the full pattern: nothing is dropped. Cost per
  example and step O(C^2 P) time and O(C P) memory, i.e. O(N^4) and O(N^3) for a dense recurrence of width N.
* **SnAp-n** (Menick et al. 2020, "Practical real time recurrent learning with a sparse approximation") keeps
  ``M`` only where ``n`` steps of the connectivity reach from a parameter's immediate influence::

      pattern_1 = support(I),   pattern_{k+1} = pattern_k | support(J) pattern_k

  and drops the rest at every step. SnAp-1 keeps, for each parameter, the carry entries it touches within one
  step (``Elman``: ``W_ij``, ``B_j``, ``R_ij`` -> ``h_j``; ``GRU`` likewise, except that a reset-gate parameter
  touches every ``h_k`` through ``(r * h) @ U_n``), so it is exact when the recurrence never moves a sensitivity
  to another carry entry. SnAp-2 on a dense recurrence reaches every entry: its pattern is full, and it is exact.
  The supports come from the cell's own Jacobians (``rtrl.structure.jacobian_supports``), once per cell and shapes.

A narrow pattern is stored column-compressed: ``rows[a, q]`` (r, P) lists the carry entries kept for parameter
``q`` (padded; ``valid`` marks the real ones), ``r`` being the largest column count, and ``M`` is the ``(r, P)``
array of its values there: O(r^2 P) time a step besides the Jacobians (``r = 1`` for SnAp-1 on Elman). A wide
pattern (``4 r > C``, e.g. SnAp-1 on GRU) is stored densely and masked, and the full one unmasked.
"""

from __future__ import annotations

import functools
import math
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.flatten_util import ravel_pytree

from rtrl import structure
from rtrl.checks import check_positive_int
from rtrl.methods.base import TraceMethod, TraceRule, example_shapes

PROBE_LIMIT = 2_000_000  # SnAp's pattern probes the full (C, P) Jacobian: not found out above this many entries


class Pattern(NamedTuple):
    mask: np.ndarray  # (C, P) bool, the kept entries
    rows: np.ndarray  # (r, P) int, the kept carry entries of each parameter, padded
    valid: np.ndarray  # (r, P) bool, False on padding

    @property
    def compressed(self) -> bool:
        """Stored as (r, P) values when that saves much; else densely (C, P), masked."""
        return 4 * self.rows.shape[0] <= self.mask.shape[0]


def compress(mask: np.ndarray) -> Pattern:
    """A boolean (C, P) pattern with its column-compressed form."""
    r = max(int(mask.sum(axis=0).max()), 1)
    rows = np.argsort(~mask, axis=0, kind="stable")[:r]  # kept rows first, in order
    return Pattern(mask, rows, np.take_along_axis(mask, rows, axis=0))


@functools.lru_cache(maxsize=32)
def snap_pattern(cell, params_spec, carry_spec, n: int) -> Pattern:
    immediate, recurrence = structure.jacobian_supports(cell, params_spec, carry_spec)
    return compress(structure.reach(recurrence, immediate, n - 1))


def propagate(pattern: Pattern | None, j_carry, j_params, values):
    """``pattern * (J M + I)`` for ``M`` zero off the pattern and stored as ``values`` (``None``: full).

    Compressed: ``(J M)[rows[a, q], q] = sum_b J[rows[a, q], rows[b, q]] values[b, q]``, O(r^2 P) time and
    O(r P) memory besides the Jacobians; dense: one (C, C) x (C, P) product, O(C^2 P)."""
    if pattern is None or not pattern.compressed:
        new = j_carry @ values + j_params
        return new if pattern is None else jnp.where(jnp.asarray(pattern.mask), new, 0)
    rows = jnp.asarray(pattern.rows)
    immediate = jnp.take_along_axis(j_params, rows, axis=0)

    def add_row(b, acc):
        return acc + j_carry[rows, rows[b]] * values[b]

    propagated = lax.fori_loop(0, rows.shape[0], add_row, jnp.zeros_like(values))
    return jnp.where(jnp.asarray(pattern.valid), propagated + immediate, 0)


def contract_on(pattern: Pattern | None, values, g):
    """``g^T M`` for ``M`` stored as ``values``: compressed, ``sum_a g[rows[a, q]] values[a, q]``."""
    if pattern is None or not pattern.compressed:
        return g @ values
    return jnp.sum(g[jnp.asarray(pattern.rows)] * values, axis=0)


class Sensitivity(TraceMethod):
    """``M`` on the pattern that ``pattern`` gives (``None``: full), carried by ``propagation(J)``."""

    def pattern(self, cell, params=None, carry=None) -> Pattern | None:
        """The kept entries for one example's ``params`` and ``carry`` (arrays or shapes; by default the cell's
        own, ``example_shapes``); ``None``: all."""
        return None

    def propagation(self, j_carry):
        """The part of the recurrence Jacobian the traces are carried by (all of it here)."""
        return j_carry

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        pattern = self.pattern(cell, params, carry)
        return TraceRule(self, functools.partial(zero_sensitivity, pattern),
                         functools.partial(advance, cell, pattern, self.propagation),
                         functools.partial(contract, cell, pattern))


def zero_sensitivity(pattern: Pattern | None, params, carry):
    flat_p, _ = ravel_pytree(params)
    flat_c, _ = ravel_pytree(carry)
    shape = (flat_c.size, flat_p.size) if pattern is None or not pattern.compressed else pattern.rows.shape
    return jnp.zeros(shape, jnp.result_type(flat_c, flat_p))


def advance(cell, pattern: Pattern | None, propagation, params, carry, traces, x):
    j_params, j_carry = structure.step_jacobians(cell, params, carry, x)
    return propagate(pattern, propagation(j_carry), j_params, traces)


def contract(cell, pattern: Pattern | None, params, traces, g_carry):
    g = structure.flat_credit(g_carry, cell.initial_carry((), traces.dtype))
    return ravel_pytree(params)[1](contract_on(pattern, traces, g))


class DenseRTRL(Sensitivity):
    """Exact RTRL for any cell: the full sensitivity ``d carry / d params``."""

    name: ClassVar[str] = "rtrl"
    exact: ClassVar[bool] = True


class SnAp(Sensitivity):
    """SnAp-``n``: sensitivities kept where ``n`` steps of the connectivity reach (``n`` >= 1)."""

    n: int = 1

    def __check_init__(self) -> None:
        check_positive_int("n", self.n)

    @property
    def name(self) -> str:
        return f"snap{self.n}"

    @property
    def summary(self) -> str:
        """This ``n``'s one line (``rtrl list methods``): what its pattern keeps and what that costs."""
        if self.n == 1:
            return ("SnAp-1: each parameter's sensitivity kept only on the carry entries it touches within one step "
                    "(Elman: R_ij -> h_j, traces the size of the parameters); exact where the recurrence never moves "
                    "a sensitivity to another entry.")
        if self.n == 2:
            return ("SnAp-2: each parameter's sensitivity kept where two steps of the connectivity reach (the entries "
                    "it touches and those they feed); on a dense recurrence that is every entry, exact RTRL's cost.")
        return f"SnAp-{self.n}: each parameter's sensitivity kept where {self.n} steps of the connectivity reach."

    def pattern(self, cell, params=None, carry=None) -> Pattern:
        params, carry = example_shapes(cell, params, carry)
        return snap_pattern(cell, structure.spec(params), structure.spec(carry), self.n)

    def trace_shapes(self, cell):
        """``None`` above ``PROBE_LIMIT`` sensitivity entries: the pattern is probed for real, at that cost."""
        params, carry = example_shapes(cell)
        if size(params) * size(carry) > PROBE_LIMIT:
            return None
        return super().trace_shapes(cell)


def size(tree) -> int:
    return sum(math.prod(a.shape) for a in jax.tree.leaves(tree))
