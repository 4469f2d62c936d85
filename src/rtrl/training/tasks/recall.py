"""Delayed recall: a stream of random bits; at every step, say the bit seen ``delay`` steps earlier.

Input (1 channel): the bit as ``+1 / -1``. Target at step ``t``: the input bit of step ``t - delay`` (0/1), scored
from step ``delay`` on (the first ``delay`` steps ask nothing). One logit per step, sigmoid cross-entropy.
Metric: ``accuracy`` of the recalled bits; chance 0.5. Needs memory of exactly ``delay`` steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Episodes, Task, binary_cross_entropy, bits_correct, weighted_mean


class Recall(Task):
    delay: int = 5
    episode_length: int = 50

    name = "recall"
    summary = "At every step, recall the input bit from `delay` steps ago."
    metric_name = "accuracy"
    input_size = 1
    output_size = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.episode_length <= self.delay:
            raise ValueError(
                f"episode_length must exceed delay={self.delay} so that something is asked, "
                f"got {self.episode_length}"
            )

    @property
    def length(self) -> int:
        return self.episode_length

    @property
    def chance(self) -> float:
        return 0.5

    def episode(self, key: jax.Array) -> Episodes:
        dtype = default_dtype()
        bits = (jax.random.uniform(key, (self.length,), dtype) < 0.5).astype(dtype)
        targets = jnp.concatenate([jnp.zeros((self.delay,), dtype), bits[: -self.delay]])[:, None]
        weights = (jnp.arange(self.length) >= self.delay).astype(dtype)
        return Episodes((2.0 * bits - 1.0)[:, None], targets, weights)

    def loss(self, outputs, targets):
        return binary_cross_entropy(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        return {
            "metric": weighted_mean(bits_correct(outputs, episodes.targets), episodes.weights),
            "loss": weighted_mean(self.loss(outputs, episodes.targets), episodes.weights),
        }
