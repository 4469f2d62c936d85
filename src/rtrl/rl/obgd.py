"""ObGD, the overshooting-bounded gradient step of Elsayed et al. (2024), as an optax transformation.

A TD update ``theta += alpha * delta * z`` (``z`` the eligibility trace) overshoots when it changes the TD error
by more than the error itself. ObGD bounds that change: with ``delta_bar = max(|delta|, 1)``::

    M = alpha * kappa * delta_bar * ||z||_1,        theta += alpha / max(M, 1) * delta * z

The transformation takes the descent direction ``-delta * z`` as its ``updates`` and the overshoot measure
``delta_bar * ||z||_1`` as the extra argument ``overshoot`` (over E parallel environments, the mean over them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def obgd(learning_rate: float = 1.0, kappa: float = 2.0) -> optax.GradientTransformationExtraArgs:
    if not learning_rate > 0:
        raise ValueError(f"lr must be positive, got {learning_rate!r}")
    if not kappa > 0:
        raise ValueError(f"kappa must be positive, got {kappa!r}")

    def init(params):
        return optax.EmptyState()

    def update(updates, state, params=None, *, overshoot=1.0, **extra):
        step = learning_rate / jnp.maximum(learning_rate * kappa * overshoot, 1.0)
        return jax.tree.map(lambda g: -step * g, updates), state

    return optax.GradientTransformationExtraArgs(init, update)
