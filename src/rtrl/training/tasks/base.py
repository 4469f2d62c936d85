"""What a task is: episodes generated from a random key, a per-step loss, and a metric with its chance level.

An episode has a fixed length ``T`` and three parts, all time-major:

* ``xs``       ``(T, *batch, input_size)`` inputs;
* ``targets``  ``(T, *batch, ...)`` what the readout should produce at each step (class labels, bits, values);
* ``weights``  ``(T, *batch)`` how much each step's loss counts, zero where nothing is asked (e.g. while a pattern
  is being shown), so that only the answer phase is scored.

``episode(key)`` draws one episode (no batch dimension; the trainer vmaps it and lays episodes back to back into
streams, see ``rtrl.training.tasks.stream``); ``eval_episodes(key, n)`` is the held-out set that ``metrics`` scores.
Everything is generated locally from the key: nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from rtrl.checks import check_positive_int
from rtrl.frozen import Frozen


class MissingPackage(ImportError):
    """A task needs an optional package that is not installed; the message says what to install."""


class Episodes(NamedTuple):
    xs: jax.Array
    targets: Any
    weights: jax.Array


def below(u: jax.Array, n) -> jax.Array:
    """An integer uniform on ``0 .. n-1`` from a uniform ``u`` in [0, 1). Each episode draws all its randomness
    in one ``jax.random.uniform`` call: one random-number kernel compiles several times faster than many."""
    return jnp.minimum(jnp.floor(u * n).astype(jnp.int32), n - 1)


def weighted_mean(values: jax.Array, weights: jax.Array) -> jax.Array:
    return jnp.sum(values * weights) / jnp.maximum(jnp.sum(weights), 1e-12)


def binary_cross_entropy(logits: jax.Array, bits: jax.Array) -> jax.Array:
    """Per example, summed over the last axis: the loss of sigmoid outputs against 0/1 targets."""
    return jnp.sum(optax.sigmoid_binary_cross_entropy(logits, bits), axis=-1)


def softmax_cross_entropy(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Per example: the loss of softmax outputs against integer class labels."""
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels)


def squared_error(outputs: jax.Array, targets: jax.Array) -> jax.Array:
    """Per example, summed over the last axis (no 1/2: the error of the best constant answer is the variance)."""
    return jnp.sum(optax.squared_error(outputs, targets), axis=-1)


def bits_correct(logits: jax.Array, bits: jax.Array) -> jax.Array:
    """Per example: whether every output bit's logit has the target's sign."""
    return jnp.all((logits > 0) == (bits > 0.5), axis=-1)


MAX_LENGTH = 2**20  # steps an episode may have: each is held whole, and every evaluation steps eval_size of them


class Task(Frozen):
    """Base class: subclasses set the class attributes and implement ``length``, ``episode``, ``loss`` and
    ``metrics``. ``metrics`` returns a dict whose ``"metric"`` entry is the task's headline number."""

    name = "task"
    summary = ""
    metric_name = "metric"
    higher_is_better = True
    input_size = 1
    output_size = 1

    def __post_init__(self) -> None:
        """Every integer option is a size, so a positive integer, except seeds (any non-negative integer); and the
        episode they make is at most ``MAX_LENGTH`` steps (a size that scales the memory and the time of every
        evaluation, bounded before anything is built)."""
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name.endswith("seed"):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ValueError(f"{field.name} must be a non-negative integer, got {value!r}")
            elif isinstance(field.default, int):
                check_positive_int(field.name, value)
        if type(self).length is not Task.length and self.length > MAX_LENGTH:
            given = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                              if getattr(self, f.name) != f.default)
            raise ValueError(f"an episode of task {self.name!r} would be {self.length:,} steps long ({given}); an "
                             f"episode may have at most 2**20 = {MAX_LENGTH:,} steps (each is held in memory whole, "
                             "and every evaluation steps eval_size of them); choose smaller options")

    def load(self) -> None:
        """Read what the task reads from files, once, so that a missing or malformed file is an error before a run
        starts (``ValueError`` naming the option); nothing for tasks generated from a key (the default)."""

    def fingerprints(self) -> dict[str, dict[str, str]]:
        """Each file the task reads as it stands now, by the option naming it: ``{"file": path, "sha256": hex}``
        (a run's checkpoint records them, and a resume refuses a file that changed under the same name); ``{}``
        for tasks generated from a key (the default)."""
        return {}

    @property
    def length(self) -> int:
        raise NotImplementedError

    @property
    def chance(self) -> float:
        """The metric of the best answer that ignores the inputs (documented per task)."""
        raise NotImplementedError

    def episode(self, key: jax.Array) -> Episodes:
        raise NotImplementedError

    def eval_episodes(self, key: jax.Array, n: int) -> Episodes:
        """``n`` held-out episodes, batch in axis 1; default: fresh episodes drawn from ``key``."""
        episodes = jax.vmap(self.episode)(jax.random.split(key, n))
        return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), episodes)

    def loss(self, outputs: jax.Array, targets) -> jax.Array:
        """Per-example loss of one step, shape ``(*batch,)``."""
        raise NotImplementedError

    def metrics(self, outputs: jax.Array, episodes: Episodes) -> dict[str, jax.Array]:
        raise NotImplementedError

    def describe(self) -> str:
        better = "higher" if self.higher_is_better else "lower"
        return f"{self.summary} Metric: {self.metric_name} ({better} is better, chance {self.chance:.3g})."


class Classification(Task):
    """A task whose answer is a class (``output_size`` logits, integer targets): softmax cross-entropy, and the
    accuracy of the argmax where the episode's weights ask for an answer."""

    metric_name = "accuracy"

    def loss(self, outputs, targets):
        return softmax_cross_entropy(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        correct = jnp.argmax(outputs, axis=-1) == episodes.targets
        return {"metric": weighted_mean(correct, episodes.weights),
                "loss": weighted_mean(self.loss(outputs, episodes.targets), episodes.weights)}
