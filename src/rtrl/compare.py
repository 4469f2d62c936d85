"""How close one gradient is to another: the measures used by the tests, the demo and the fidelity report."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def nonzero(norm: jax.Array) -> jax.Array:
    """A norm to divide by: 1 where it is zero (in any dtype; a tiny floor such as 1e-300 is 0 in float32)."""
    return jnp.where(norm > 0, norm, jnp.ones_like(norm))


def relative_error(grads, reference) -> float:
    """Largest over parameters of ``||g - ref|| / ||ref||`` (Frobenius norms; a zero reference counts as 1, so
    the error against it is absolute)."""
    errors = jax.tree.map(lambda g, r: jnp.linalg.norm((g - r).ravel()) / nonzero(jnp.linalg.norm(r.ravel())), grads,
                          reference)
    return float(max(jax.tree.leaves(errors)))


def cosine(grads, reference) -> float:
    """Cosine similarity of the two gradients flattened into single vectors (0 when either is zero)."""
    g = jnp.concatenate([a.ravel() for a in jax.tree.leaves(grads)])
    r = jnp.concatenate([a.ravel() for a in jax.tree.leaves(reference)])
    return float(g @ r / nonzero(jnp.linalg.norm(g) * jnp.linalg.norm(r)))


def squared_error(h, y):
    """The summed squared error of an output ``h`` against a target ``y``: the per-step loss of the fidelity report
    and the benchmarks' random problems."""
    return jnp.sum((h - y) ** 2)
