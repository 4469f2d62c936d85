"""MNIST-1D (Greydanus 2020), generated locally: classify a noisy 1-D digit read one value per step.

Each of the ten digits is a 12-point template curve; an example is its template padded with 36..60 zeros,
stretched to 72 points, scaled by a random factor in [0.8, 1.2], circularly shifted by up to 48 points, its
padding filled with smooth (Gaussian-filtered) noise, plus white noise and a random linear shear, then resampled
to 40 points; the whole set is standardised. This is a numpy re-implementation of the published recipe from a
seed, not the reference pickle (no download): numbers are comparable in difficulty, not identical.

Input (1 channel): the 40 values, one per step. Target: the digit, scored at the last step only (softmax
cross-entropy over 10 logits). Metric: ``accuracy`` on the held-out split; chance 0.1 (classes are balanced).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.training.tasks.base import Episodes, Task, below, default_dtype, softmax_cross_entropy, weighted_mean

TEMPLATES = np.array(
    [
        [5, 6, 6.5, 6.75, 7, 7, 7, 7, 6.75, 6.5, 6, 5],
        [5, 3, 3, 3.4, 3.8, 4.2, 4.6, 5, 5.4, 5.8, 5, 5],
        [5, 6, 6.5, 6.5, 6, 5.25, 4.75, 4, 3.5, 3.5, 4, 5],
        [5, 6, 6.5, 6.5, 6, 5, 5, 6, 6.5, 6.5, 6, 5],
        [5, 4.4, 3.8, 3.2, 2.6, 2.6, 5, 5, 5, 5, 5, 5],
        [5, 3, 3, 3, 3, 5, 6, 6.5, 6.5, 6, 4.5, 5],
        [5, 4, 3.5, 3.25, 3, 3, 3, 3, 3.25, 3.5, 4, 5],
        [5, 7, 7, 6.6, 6.2, 5.8, 5.4, 5, 4.6, 4.2, 5, 5],
        [5, 4, 3.5, 3.5, 4, 5, 5, 4, 3.5, 3.5, 4, 5],
        [5, 4, 3.5, 3.5, 4, 5, 5, 5, 5, 4.7, 4.3, 5],
    ]
)


def resample(x: np.ndarray, n: int) -> np.ndarray:
    """Linear interpolation of ``x`` onto ``n`` evenly spaced points over the same span."""
    return np.interp(np.linspace(0, 1, n), np.linspace(0, 1, len(x)), x)


def smooth(noise: np.ndarray, sigma: float = 2.0) -> np.ndarray:
    """Gaussian filter (reflecting edges), as the recipe's correlated noise."""
    radius = int(4 * sigma + 0.5)
    kernel = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    return np.convolve(np.pad(noise, radius, mode="symmetric"), kernel / kernel.sum(), mode="valid")


def make_example(template: np.ndarray, rng: np.random.Generator, length: int) -> np.ndarray:
    padded = np.concatenate([template + 1e-8, np.zeros(rng.integers(36, 61))])
    x = resample(padded, 12 + 60) * (1 + 0.4 * (rng.random() - 0.5))
    shift = rng.integers(0, 48)
    x = np.roll(x, shift)
    x = np.where(x != 0, x, smooth(0.25 * rng.standard_normal(len(x))))
    x = x + 0.02 * rng.standard_normal(len(x))
    x = x - 0.75 * (rng.random() - 0.5) * np.linspace(-0.5, 0.5, len(x))
    return resample(x, length)


def make_dataset(n: int, seed: int, length: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """``n`` standardised examples ``(n, length)`` and their labels ``(n,)``, balanced and shuffled."""
    templates = TEMPLATES - TEMPLATES.mean(1, keepdims=True)
    templates = templates / templates.std(1, keepdims=True)
    templates = (templates - templates[:, :1]) / 6.0  # every curve starts and ends at 0
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 10)
    xs = np.stack([make_example(templates[y], rng, length) for y in labels])
    return (xs - xs.mean()) / xs.std(), labels


class MNIST1D(Task):
    train_size: int = 4000
    test_size: int = 1000
    data_seed: int = 42

    name = "mnist1d"
    summary = "Classify an MNIST-1D digit (generated locally) read one value per step; answer at the end."
    metric_name = "accuracy"
    input_size = 1
    output_size = 10

    @property
    def length(self) -> int:
        return 40

    @property
    def chance(self) -> float:
        return 0.1

    @functools.cached_property
    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole set, train split first; generated once per task object."""
        return make_dataset(self.train_size + self.test_size, self.data_seed, self.length)

    def as_episodes(self, signals, labels) -> Episodes:
        """Time-major episodes of a batch of signals ``(..., 40)``; the label is asked at the last step."""
        dtype = default_dtype()
        xs = jnp.moveaxis(jnp.asarray(signals, dtype), -1, 0)[..., None]
        last = (jnp.arange(self.length) == self.length - 1).astype(dtype)
        last = jnp.broadcast_to(last.reshape((-1,) + (1,) * (xs.ndim - 2)), xs.shape[:-1])
        return Episodes(xs, jnp.broadcast_to(jnp.asarray(labels), xs.shape[:-1]), last)

    def episode(self, key: jax.Array) -> Episodes:
        signals, labels = self.data
        i = below(jax.random.uniform(key, ()), self.train_size)
        return self.as_episodes(jnp.asarray(signals[: self.train_size])[i], jnp.asarray(labels)[i])

    def eval_episodes(self, key: jax.Array, n: int) -> Episodes:
        """The first ``n`` examples of the test split (``key`` is unused: the split is fixed)."""
        signals, labels = self.data
        n = min(n, self.test_size)
        return self.as_episodes(signals[self.train_size : self.train_size + n], labels[self.train_size :][:n])

    def loss(self, outputs, targets):
        return softmax_cross_entropy(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        correct = (jnp.argmax(outputs, axis=-1) == episodes.targets).astype(outputs.dtype)
        return {
            "metric": weighted_mean(correct, episodes.weights),
            "loss": weighted_mean(self.loss(outputs, episodes.targets), episodes.weights),
        }
