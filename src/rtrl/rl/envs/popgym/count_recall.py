"""popgym's CountRecall: how many times has the queried value been dealt so far?

* Two decks of ``decks`` packs are shuffled, one of values and one of queries, and a card of each is dealt a step
  (the first at reset). Observation: the value's and the query's ``kind`` (colour, suit or rank), one-hot each
  (``MultiDiscrete([n, n])`` flattened).
* Each step's action (``0 .. 52 * decks / n``) is rewarded ``+1 / (52 * decks - 1)`` if it is the number of values
  dealt so far (the one shown included) equal to the query shown, else the same amount negative; then the next pair
  is dealt. The episode ends (terminated) with the last pair, after ``52 * decks - 1`` steps.
* Easy: 1 pack, colours; Medium: 2, suits; Hard: 4, ranks.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env
from rtrl.rl.envs.popgym import cards as C


class CountRecallState(NamedTuple):
    values: jax.Array  # (52 * decks,) int32: the value deck's cards in the order dealt
    queries: jax.Array  # (52 * decks,) int32: the query deck's
    counts: jax.Array  # (n,) int32: how many values of each kind have been dealt
    time: jax.Array  # int32: steps taken; the pair shown is values[time], queries[time]
    spares: jax.Array  # (2, 52 * decks) int32: the next episode's two decks, shuffled a swap a step


class CountRecall(Env):
    decks: int = 1
    kind: str = "colors"

    def __post_init__(self) -> None:
        check_positive_int("decks", self.decks)
        C.check_kind(self.kind)

    name = property(lambda self: f"popgym CountRecall(decks={self.decks}, kind={self.kind})")
    distinct = property(lambda self: C.KINDS[self.kind])
    obs_size = property(lambda self: 2 * self.distinct)
    num_actions = property(lambda self: C.PACK * self.decks // self.distinct + 1)
    max_steps = property(lambda self: C.PACK * self.decks - 1)

    def observe(self, state: CountRecallState) -> jax.Array:
        pair = C.value(jnp.stack([state.values[state.time], state.queries[state.time]]), self.kind)
        return C.one_hot(pair, self.distinct).reshape(-1)

    def start(self, values: jax.Array, queries: jax.Array, spares: jax.Array | None = None) -> CountRecallState:
        """The state after the reset's deal, from the two decks (in the order dealt)."""
        values, queries = jnp.asarray(values, jnp.int32), jnp.asarray(queries, jnp.int32)
        counts = jnp.zeros(self.distinct, jnp.int32).at[C.value(values[0], self.kind)].add(1)
        spares = jnp.tile(jnp.arange(values.shape[0], dtype=jnp.int32), (2, 1)) if spares is None else spares
        return CountRecallState(values, queries, counts, jnp.zeros((), jnp.int32), spares)

    def reset(self, key):
        k_values, k_queries = jax.random.split(key)
        state = self.start(C.shuffled(k_values, self.decks), C.shuffled(k_queries, self.decks))
        return self.observe(state), state

    def restart(self, key, state):  # the decks shuffled along the episode (C.DeckGame)
        fresh = self.start(state.spares[0], state.spares[1], jnp.stack([state.values, state.queries]))
        return self.observe(fresh), fresh

    def transition(self, key, state, action):
        answer = state.counts[C.value(state.queries[state.time], self.kind)]
        t = state.time + 1
        counts = state.counts.at[C.value(state.values[t], self.kind)].add(1)
        spares = jax.vmap(C.shuffle_step, (0, 0, None))(jax.random.split(key), state.spares, t)
        state = CountRecallState(state.values, state.queries, counts, t, spares)
        reward = C.signed(action == answer, 1.0 / self.max_steps)
        return self.observe(state), state, reward, t >= self.max_steps, jnp.zeros((), bool)
