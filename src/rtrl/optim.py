"""The optimisers of a run, made in one place: ``make_optimizer(name, lr, clip, kappa)`` (``adam`` or ``sgd`` after
global-norm clipping, or ``obgd``), as ``rtrl train`` and ``rtrl rl`` name them.

ObGD is the overshooting-bounded gradient step of Elsayed et al. (2024), as an optax transformation.

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

from rtrl.config import checked, positive_float

OPTIMIZERS = ("adam", "sgd", "obgd")


def make_optimizer(name: str = "adam", lr: float = 1e-3, clip: float | None = 1.0, kappa: float = 2.0
                   ) -> optax.GradientTransformationExtraArgs:
    """``adam`` or ``sgd`` at learning rate ``lr``, after clipping the global gradient norm to ``clip`` (if any); or
    ``obgd(lr, kappa)`` (whose update takes the ``overshoot``; ``clip`` does not apply to it)."""
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    checked("lr", positive_float, lr)
    if name == "obgd":
        return obgd(lr, kappa)
    if clip is not None:  # None: no clipping
        checked("clip", positive_float, clip)
    clipping = optax.clip_by_global_norm(clip) if clip is not None else optax.identity()
    return optax.chain(clipping, {"adam": optax.adam, "sgd": optax.sgd}[name](lr))


def obgd(learning_rate: float = 1.0, kappa: float = 2.0) -> optax.GradientTransformationExtraArgs:
    """ObGD: ``updates`` (the descent direction ``-delta * z``) scaled by ``learning_rate / max(M, 1)``, with
    ``M = learning_rate * kappa * overshoot`` (the extra argument)."""
    checked("learning_rate", positive_float, learning_rate)  # an infinite step or bound makes every update NaN or 0
    checked("kappa", positive_float, kappa)

    def init(params):
        return optax.EmptyState()

    def update(updates, state, params=None, *, overshoot=1.0, **extra):
        step = learning_rate / jnp.maximum(learning_rate * kappa * overshoot, 1.0)
        return jax.tree.map(lambda g: -step * g, updates), state

    return optax.GradientTransformationExtraArgs(init, update)
