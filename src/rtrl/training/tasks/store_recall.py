"""Store-recall (Bellec et al. 2018, 2020): store a bit on command, recall it on command much later.

Input (3 channels: value as +1 / -1, store, recall), one episode of ``episode_length`` steps: a random value bit at
every step; the store channel is on at one step in the first quarter, the recall channel at one step in the second
half. Target at the recall step: the value bit that was shown at the store step (0/1); only that step is scored. One
logit, sigmoid cross-entropy. Metric: ``accuracy`` of the recalled bit; chance 0.5. The store and the recall are
at least a quarter of the episode apart (in the defaults, 15 to 57 steps), beyond a LIF membrane's memory
(``1 / (1 - leak)`` = 10 steps by default): the bit has to be held by adaptation or recurrence.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.checks import default_dtype
from rtrl.training.tasks.base import Episodes, Task, below, binary_cross_entropy, bits_correct, weighted_mean


def store_recall_episode(bits: jax.Array, store_at, recall_at, dtype) -> Episodes:
    """The episode for the value ``bits`` (0/1, one per step) with the store and recall commands at the given steps."""
    t = jnp.arange(bits.shape[0])
    store, recall = (t == store_at).astype(dtype), (t == recall_at).astype(dtype)
    xs = jnp.stack([2.0 * bits.astype(dtype) - 1.0, store, recall], axis=-1)
    return Episodes(xs, jnp.broadcast_to(bits[store_at].astype(dtype), t.shape)[:, None], recall)


class StoreRecall(Task):
    episode_length: int = 60

    name = "store_recall"
    summary = "Store the value bit shown with the store command; give it back at the recall command."
    metric_name = "accuracy"
    input_size = 3
    output_size = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.episode_length < 4:
            raise ValueError(f"episode_length must be at least 4 (a store and a later recall), got "
                             f"{self.episode_length}")

    @property
    def length(self) -> int:
        return self.episode_length

    @property
    def chance(self) -> float:
        return 0.5

    def episode(self, key: jax.Array) -> Episodes:
        u = jax.random.uniform(key, (self.length + 2,))
        bits = (u[: self.length] < 0.5).astype(jnp.int32)
        half, quarter = self.length // 2, max(self.length // 4, 1)
        store_at = below(u[-2], quarter)
        recall_at = half + below(u[-1], self.length - half)
        return store_recall_episode(bits, store_at, recall_at, default_dtype())

    def loss(self, outputs, targets):
        return binary_cross_entropy(outputs, targets)

    def metrics(self, outputs, episodes: Episodes):
        return {"metric": weighted_mean(bits_correct(outputs, episodes.targets), episodes.weights),
                "loss": weighted_mean(self.loss(outputs, episodes.targets), episodes.weights)}
