"""Copy: show a random bit pattern of length 1..L, then ask for it back after a go signal.

Inputs (3 channels): ``[bit is 1, bit is 0, go]``. An episode has length ``2 L + 1``; with a pattern length ``l``
drawn uniformly from ``1..L``::

    step        0 .. l-1        l        l+1 .. 2l        2l+1 .. 2L
    input       one-hot bits    go       nothing          nothing
    target      -               -        the bits again   -
    weight      0               0        1                0

The readout emits one logit per step (sigmoid cross-entropy). Metrics: ``token_accuracy`` (the headline: fraction
of recalled bits right) and ``sequence_accuracy`` (fraction of episodes whose whole pattern is right). Chance:
0.5 per token; guessing whole patterns succeeds with probability ``mean over l of 2^-l = (1 - 2^-L) / L``. Bit
``i`` is recalled ``l + 1`` steps after it was shown, so the task needs memory of up to ``L + 1`` steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.checks import default_dtype
from rtrl.training.tasks.base import (
    Episodes,
    Task,
    below,
    binary_cross_entropy,
    bits_correct,
    weighted_mean,
)


class Copy(Task):
    max_length: int = 8

    name = "copy"
    summary = "Recall a random bit pattern of length 1..max_length after a go signal."
    metric_name = "token_accuracy"
    input_size = 3
    output_size = 1

    @property
    def length(self) -> int:
        return 2 * self.max_length + 1

    @property
    def chance(self) -> float:
        return 0.5

    def episode(self, key: jax.Array) -> Episodes:
        L, dtype = self.max_length, default_dtype()
        u = jax.random.uniform(key, (L + 1,), dtype)
        l = 1 + below(u[0], L)
        bits = (u[1:] < 0.5).astype(dtype)
        t = jnp.arange(self.length)
        showing = t < l
        shown = jnp.where(showing, bits[jnp.minimum(t, L - 1)], 0.0)
        xs = jnp.stack([shown, jnp.where(showing, 1.0 - shown, 0.0), (t == l).astype(dtype)], axis=-1)
        recalling = (t > l) & (t <= 2 * l)
        targets = jnp.where(recalling, bits[jnp.clip(t - l - 1, 0, L - 1)], 0.0)[:, None]
        return Episodes(xs.astype(dtype), targets, recalling.astype(dtype))

    def loss(self, outputs, targets):
        return binary_cross_entropy(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        correct = bits_correct(outputs, episodes.targets)
        asked = episodes.weights > 0
        whole = jnp.all(correct | ~asked, axis=0)
        return {
            "metric": weighted_mean(correct, episodes.weights),
            "sequence_accuracy": jnp.mean(whole),
            "loss": weighted_mean(self.loss(outputs, episodes.targets), episodes.weights),
        }
