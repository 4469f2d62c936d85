"""UORO, unbiased online recurrent optimisation (Tallec and Ollivier 2017), for any cell.

The sensitivity ``M = d carry / d params`` (C, P) is replaced by a random rank-one estimate
``c_tilde theta_tilde^T`` with ``E[c_tilde theta_tilde^T] = M``. With ``J = d carry'/d carry``,
``I = d carry'/d params`` and fresh random signs ``nu`` (C,) (each +-1, so ``E[nu nu^T] = 1``)::

    c_tilde'     = rho0 * J c_tilde + rho1 * nu
    theta_tilde' = theta_tilde / rho0 + (nu^T I) / rho1
    rho0 = sqrt(|theta_tilde| / |J c_tilde|),   rho1 = sqrt(|nu^T I| / |nu|)     (eps-guarded)

``J c_tilde`` is one forward-mode product and ``nu^T I`` one reverse-mode product of a single step, so a step
costs a small constant times a forward step and the traces hold ``C + P`` numbers. The cross terms have zero
mean (``rho1`` is even in ``nu``) and ``rho0 / rho0``, ``rho1 / rho1`` cancel, so the estimate is unbiased at
every step; its variance, not its mean, is what the ``rho`` scalings keep small.

Randomness keeps the online step pure: the traces hold a step counter (uint32, wrapping after 2**32 steps),
and step ``t`` draws its signs from ``fold_in(PRNGKey(seed), t)``. ``seed`` is a constructor argument: an int
(hashable, as ``sequence_grad`` needs: it compiles once per method), or a traced integer scalar to ``vmap`` the
online step over seeds. Every example of a batch starts from the same seed (the library maps ``init`` over the
batch with no example index), so their signs coincide; each example's estimate is unbiased all the same. A
reset zeroes the counter like every trace, restarting that example's stream.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from rtrl import structure
from rtrl.methods.base import TraceMethod, TraceRule

EPS = 1e-7  # Tallec and Ollivier's guard against 0/0 in the rho scalings (irrelevant to the mean)


class UOROTraces(NamedTuple):
    """One example's rank-one estimate ``carry (x) params`` of ``d carry / d params``, and its step counter."""

    carry: jax.Array  # c_tilde (C,)
    params: jax.Array  # theta_tilde (P,)
    step: jax.Array  # uint32: step t draws its signs from fold_in(PRNGKey(seed), t)


class UORO(TraceMethod):
    """Unbiased rank-one traces; ``seed`` seeds the random signs (see the module docstring)."""

    seed: Any = 0
    name: ClassVar[str] = "uoro"

    def __check_init__(self) -> None:
        integer = isinstance(self.seed, int) or jnp.issubdtype(getattr(self.seed, "dtype", float), jnp.integer)
        if isinstance(self.seed, bool) or not integer or jnp.ndim(self.seed) != 0:
            raise ValueError(f"seed must be an integer (a Python int, or a scalar integer array), got {self.seed!r}")

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        """Nothing to find in the cell: the rule is the same for every cell."""
        return TraceRule(self, zero_estimate, functools.partial(advance, cell, self.seed),
                         functools.partial(contract, cell))


def zero_estimate(params, carry) -> UOROTraces:
    flat_p, _ = ravel_pytree(params)
    flat_c, _ = ravel_pytree(carry)
    dtype = jnp.result_type(flat_c, flat_p)
    return UOROTraces(jnp.zeros(flat_c.shape, dtype), jnp.zeros(flat_p.shape, dtype), jnp.zeros((), jnp.uint32))


def advance(cell, seed, params, carry, traces: UOROTraces, x) -> UOROTraces:
    f, flat_p, flat_c, _ = structure.flat_step(cell, params, carry, x)
    c_tilde, theta_tilde = traces.carry, traces.params
    key = jax.random.fold_in(jax.random.PRNGKey(seed), traces.step)
    nu = jax.random.rademacher(key, c_tilde.shape, c_tilde.dtype)
    j_c = jax.jvp(lambda c: f(flat_p, c), (flat_c,), (c_tilde,))[1]
    nu_i = jax.vjp(lambda p: f(p, flat_c), flat_p)[1](nu)[0]
    norm = jnp.linalg.norm
    rho0 = jnp.sqrt((norm(theta_tilde) + EPS) / (norm(j_c) + EPS))
    rho1 = jnp.sqrt((norm(nu_i) + EPS) / (norm(nu) + EPS))
    return UOROTraces(rho0 * j_c + rho1 * nu, theta_tilde / rho0 + nu_i / rho1, traces.step + jnp.uint32(1))


def contract(cell, params, traces: UOROTraces, g_carry):
    g = structure.flat_credit(g_carry, cell.initial_carry((), traces.carry.dtype))
    return ravel_pytree(params)[1]((g @ traces.carry) * traces.params)
