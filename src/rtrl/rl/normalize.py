"""Running statistics for streaming normalisation (Welford's algorithm, batches merged as Chan et al. do).

Streaming updates see each observation once, in whatever scale the environment uses; Elsayed et al. (2024) found
normalising observations (running mean and variance) and scaling rewards (by the running standard deviation of
the discounted return) necessary for stable streaming deep RL.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

EPS = 1e-8


class Running(NamedTuple):
    count: jax.Array  # scalar
    mean: jax.Array
    m2: jax.Array  # sum of squared deviations from the mean


def running_init(shape: tuple[int, ...], dtype) -> Running:
    return Running(jnp.zeros((), dtype), jnp.zeros(shape, dtype), jnp.zeros(shape, dtype))


def running_update(stats: Running, batch: jax.Array) -> Running:
    """``stats`` after the samples ``batch`` (leading axis: samples)."""
    n = batch.shape[0]
    mean_b = batch.mean(axis=0)
    m2_b = ((batch - mean_b) ** 2).sum(axis=0)
    count = stats.count + n
    delta = mean_b - stats.mean
    mean = stats.mean + delta * n / count
    m2 = stats.m2 + m2_b + delta**2 * stats.count * n / count
    return Running(count, mean, m2)


def running_var(stats: Running) -> jax.Array:
    return stats.m2 / jnp.maximum(stats.count, 1)


def normalized(stats: Running, x: jax.Array) -> jax.Array:
    return (x - stats.mean) / jnp.sqrt(running_var(stats) + EPS)
