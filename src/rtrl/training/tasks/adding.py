"""The adding problem (Hochreiter & Schmidhuber 1997): add the two marked numbers of a long sequence.

Inputs (2 channels): a value drawn uniformly from [0, 1] at every step, and a marker that is 1 at exactly two
steps, one in each half of the sequence. Target, scored at the last step only: the sum of the two marked values.
One linear output, squared error. Metric: ``mse`` at the last step (lower is better). Chance: the best constant
answer is the mean of the sum, 1, whose error is the variance of a sum of two independent uniforms,
``2 / 12 = 1/6 ≈ 0.167``; a model must remember the first marked value for about ``length / 2`` steps to beat it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Episodes, Task, below, squared_error, weighted_mean


class Adding(Task):
    sequence_length: int = 20

    name = "adding"
    summary = "Add the two marked numbers of a sequence (answer at its last step)."
    metric_name = "mse"
    higher_is_better = False
    input_size = 2
    output_size = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sequence_length < 2:
            raise ValueError(f"sequence_length must be at least 2 (one mark per half), got {self.sequence_length}")

    @property
    def length(self) -> int:
        return self.sequence_length

    @property
    def chance(self) -> float:
        return 1.0 / 6.0

    def episode(self, key: jax.Array) -> Episodes:
        T, dtype = self.length, default_dtype()
        u = jax.random.uniform(key, (T + 2,), dtype)
        values, half = u[:T], T // 2
        first, second = below(u[T], half), half + below(u[T + 1], T - half)
        t = jnp.arange(T)
        marks = ((t == first) | (t == second)).astype(dtype)
        total = values[first] + values[second]
        last = (t == T - 1).astype(dtype)
        return Episodes(jnp.stack([values, marks], axis=-1), (last * total)[:, None], last)

    def loss(self, outputs, targets):
        return squared_error(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        mse = weighted_mean(self.loss(outputs, episodes.targets), episodes.weights)
        return {"metric": mse, "loss": mse}
