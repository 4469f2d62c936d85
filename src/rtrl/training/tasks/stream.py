"""Streams: each of B independent streams is an endless sequence of episodes laid back to back.

Episode ``e`` of stream ``b`` is ``task.episode(fold_in(fold_in(key, b), e))``, so any window of the stream is a
pure function of ``(key, position)``: a run resumed from a checkpoint sees exactly the data it would have seen.
Stream ``b`` may start ``offsets[b]`` steps into its episodes (staggered streams reach their answer phases at
different times). ``done[t, b]`` marks the first step of an episode, where the learner resets before stepping.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.training.tasks.base import Episodes, Task


def stream_chunk(task: Task, key: jax.Array, start, length: int, offsets: jax.Array) -> tuple[Episodes, jax.Array]:
    """Steps ``start .. start + length - 1`` of every stream: episodes with leaves ``(length, B, ...)`` and
    ``done`` ``(length, B)``. ``length`` is static; ``start`` may be traced."""
    T = task.length
    n_episodes = -(-length // T) + 1  # enough whole episodes to cover any window of `length` steps
    B = offsets.shape[0]
    positions = start + offsets  # (B,)

    def episode_keys(b, first):
        stream_key = jax.random.fold_in(key, b)
        return jax.vmap(lambda e: jax.random.fold_in(stream_key, e))(first + jnp.arange(n_episodes))

    keys = jax.vmap(episode_keys)(jnp.arange(B), positions // T)  # (B, n_episodes, 2)
    # one flat vmap over all (stream, episode) pairs: nested vmaps of the episode compile far slower
    episodes = jax.vmap(task.episode)(keys.reshape((B * n_episodes,) + keys.shape[2:]))

    def window(a):
        streams = a.reshape((B, n_episodes * T) + a.shape[2:])
        cut = jax.vmap(lambda s, p: jax.lax.dynamic_slice_in_dim(s, p % T, length))(streams, positions)
        return jnp.swapaxes(cut, 0, 1)

    done = (positions[None, :] + jnp.arange(length)[:, None]) % T == 0
    return jax.tree.map(window, episodes), done
