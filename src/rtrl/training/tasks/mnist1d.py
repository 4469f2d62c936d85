"""MNIST-1D (Greydanus 2020): classify a noisy 1-D digit read one value per step.

The data is the dataset author's own generator, ``mnist1d.data.make_dataset`` from the ``mnist1d`` package
(the ``mnist1d`` extra; imported on first use, never ``get_dataset``, which downloads): ten 12-point
template curves padded, stretched, scaled, shifted, filled with correlated noise, sheared and resampled to 40
points, from a seed, so the default task (4000 train, 1000 test, seed 42) is the published dataset exactly.

Input (1 channel): the 40 values, one per step. Target: the digit, scored at the last step only (softmax
cross-entropy over 10 logits). Metric: ``accuracy`` on the held-out split; chance 0.1 (classes are balanced).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.checks import default_dtype
from rtrl.extras import install
from rtrl.training.tasks.base import Episodes, MissingPackage, Task, below, softmax_cross_entropy, weighted_mean


def make_dataset(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` standardised examples ``(n, 40)`` and their labels ``(n,)``, ``n / 10`` of each digit, shuffled:
    the ``mnist1d`` package's recipe with its default arguments but ``n`` and ``seed``. That package seeds
    numpy's global random state; it is restored afterwards, so generating the data changes nothing else."""
    try:
        from mnist1d.data import get_dataset_args
        from mnist1d.data import make_dataset as generate
    except ImportError:
        raise MissingPackage(
            f"the mnist1d task needs the `mnist1d` package (the dataset author's generator): {install('mnist1d')}"
        ) from None
    args = get_dataset_args()
    args.num_samples, args.seed, args.train_split = n, seed, 1.0  # one split here; the task cuts its own
    saved = np.random.get_state()
    try:
        data = generate(args)
    finally:
        np.random.set_state(saved)
    return data["x"], data["y"]


class MNIST1D(Task):
    train_size: int = 4000
    test_size: int = 1000
    data_seed: int = 42

    name = "mnist1d"
    summary = "Classify an MNIST-1D digit (generated locally) read one value per step; answer at the end."
    metric_name = "accuracy"
    input_size = 1
    output_size = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.train_size + self.test_size) % 10:
            raise ValueError(
                f"train_size + test_size must be a multiple of 10 (the digits are balanced), got "
                f"{self.train_size} + {self.test_size}"
            )

    @property
    def length(self) -> int:
        return 40

    @property
    def chance(self) -> float:
        return 0.1

    @functools.cached_property
    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole set, train split first; generated once per task object."""
        return make_dataset(self.train_size + self.test_size, self.data_seed)

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
