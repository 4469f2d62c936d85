"""Oscillation: after a one-step cue, generate a sum of sines (a resonance task, where IIR neurons shine).

There are ``patterns`` waveforms, fixed by the task (not by the seed); pattern ``c`` is
``y_c(s) = sum_j 0.5 sin(w_cj s)`` over ``waves`` frequencies ``w_cj`` with periods between 6 and 30 steps, where
``s`` counts steps since the cue. Inputs (``patterns`` channels): at step 0, channel ``c`` carries the cue's
amplitude ``a``, drawn uniformly from [0.5, 1.5]; all later inputs are zero, so the output must be generated
from the network's own dynamics. Target: ``a * y_c(s)`` at every step after the cue (one linear output, squared
error). Metric: ``nmse``, the squared error divided by the mean square of the target (lower is better).
Answering 0 scores 1; chance is the score of the best answer that ignores the cue, the mean waveform
``E[a] mean_c y_c(s)``, computed exactly by ``chance`` (about 0.57 for the defaults).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Episodes, Task, below, squared_error, weighted_mean


class Sines(Task):
    patterns: int = 2
    waves: int = 2
    episode_length: int = 40

    name = "sines"
    summary = "After a one-step cue, generate the cued sum of sines from the network's own dynamics."
    metric_name = "nmse"
    higher_is_better = False
    output_size = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.episode_length < 2:
            raise ValueError(f"episode_length must be at least 2 (a cue and an answer), got {self.episode_length}")

    @property
    def input_size(self) -> int:
        return self.patterns

    @property
    def length(self) -> int:
        return self.episode_length

    @property
    def chance(self) -> float:
        s = np.arange(1, self.length)
        waves = 0.5 * np.sin(s[None, :, None] * self.frequencies()[:, None, :]).sum(-1)  # (patterns, T - 1)
        mean_a2 = 1.0 + 1.0 / 12.0  # E[a^2] for a ~ U[0.5, 1.5]; E[a] = 1
        power = mean_a2 * np.mean(waves**2, axis=0)
        error = power - np.mean(waves, axis=0) ** 2
        return float(error.sum() / power.sum())

    def frequencies(self) -> np.ndarray:
        """``(patterns, waves)`` angular frequencies, periods spread over 6..30 steps, distinct per pattern."""
        n = self.patterns * self.waves
        periods = 6.0 * (5.0 ** (np.arange(n) / max(n - 1, 1)))
        order = np.arange(n).reshape(self.waves, self.patterns).T  # interleave: each pattern fast and slow
        return (2 * math.pi / periods)[order]

    def episode(self, key: jax.Array) -> Episodes:
        T, dtype = self.length, default_dtype()
        u = jax.random.uniform(key, (2,), dtype)
        c, a = below(u[0], self.patterns), 0.5 + u[1]
        s = jnp.arange(T, dtype=dtype)
        wave = 0.5 * jnp.sin(s[:, None] * jnp.asarray(self.frequencies(), dtype)[c]).sum(-1)
        xs = jnp.zeros((T, self.patterns), dtype).at[0, c].set(a)
        weights = (s > 0).astype(dtype)
        return Episodes(xs, (a * wave * weights)[:, None], weights)

    def loss(self, outputs, targets):
        return squared_error(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        mse = weighted_mean(self.loss(outputs, episodes.targets), episodes.weights)
        power = weighted_mean(jnp.sum(episodes.targets**2, axis=-1), episodes.weights)
        return {"metric": mse / power, "loss": mse}
