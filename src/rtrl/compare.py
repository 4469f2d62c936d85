"""How close one gradient is to another: the measures used by the tests, the demo and the fidelity report."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def relative_error(grads, reference) -> float:
    """Largest over parameters of ``||g - ref|| / ||ref||`` (Frobenius norms; a zero reference counts as 1)."""
    errors = jax.tree.map(
        lambda g, r: jnp.linalg.norm((g - r).ravel()) / jnp.maximum(jnp.linalg.norm(r.ravel()), 1e-300),
        grads,
        reference,
    )
    return float(max(jax.tree.leaves(errors)))


def cosine(grads, reference) -> float:
    """Cosine similarity of the two gradients flattened into single vectors."""
    g = jnp.concatenate([a.ravel() for a in jax.tree.leaves(grads)])
    r = jnp.concatenate([a.ravel() for a in jax.tree.leaves(reference)])
    return float(g @ r / jnp.maximum(jnp.linalg.norm(g) * jnp.linalg.norm(r), 1e-300))
