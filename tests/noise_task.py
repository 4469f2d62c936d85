"""A tiny task for the trainer's rule tests: episodes of 3 steps of random inputs and targets, every step scored
with weight 1, 2, 3 (so a step read twice or skipped changes the numbers); squared-error loss. Test data, not an
oracle: the oracles read its episodes straight from ``episode``."""

import jax
import jax.numpy as jnp

from rtrl.training.tasks import Episodes, Task

LENGTH = 3


class Noise(Task):
    name = "noise"
    input_size = 1
    output_size = 1

    @property
    def length(self) -> int:
        return LENGTH

    @property
    def chance(self) -> float:
        return 0.0

    def episode(self, key):
        u = jax.random.normal(key, (2, LENGTH, 1), jnp.float64)
        return Episodes(u[0], u[1], jnp.arange(1.0, LENGTH + 1.0))

    def loss(self, outputs, targets):
        return jnp.sum((outputs - targets) ** 2, axis=-1)

    def metrics(self, outputs, episodes):
        loss = jnp.sum(self.loss(outputs, episodes.targets) * episodes.weights) / jnp.sum(episodes.weights)
        return {"metric": loss, "loss": loss}
