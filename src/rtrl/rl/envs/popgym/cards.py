"""popgym's deck of cards (``popgym.core.deck.Deck``) as integers, and what the games share: one-hot observations,
signed rewards, a uniform pick among allowed cells, the card games' state and base class.

A deck of ``decks`` packs holds the cards ``0 .. 52 * decks - 1``; card ``c`` has the suit ``c % 4``, the colour
``c % 2`` and the rank ``(c % 52) // 4`` (ace first), as popgym's ``suits_idx``, ``colors_idx`` and ``ranks_idx``
give them. A shuffled deck is a permutation of those cards in the order they are dealt (popgym deals from the end of
its shuffled ``idx``: its order reversed).
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env

PACK = 52
KINDS = {"suits": 4, "colors": 2, "ranks": 13}  # what a card is told apart by -> how many values it takes


def value(cards: jax.Array, kind: str) -> jax.Array:
    """The suit, colour or rank of each card (int32)."""
    cards = jnp.asarray(cards, jnp.int32)
    return {"suits": cards % 4, "colors": cards % 2, "ranks": (cards % PACK) // 4}[kind]


def shuffled(key: jax.Array, decks: int) -> jax.Array:
    """``decks`` packs shuffled: the cards in the order they are dealt (int32)."""
    return jax.random.permutation(key, PACK * decks).astype(jnp.int32)


def one_hot(index: jax.Array, n: int) -> jax.Array:
    """A ``Discrete(n)`` observation under ``gymnasium.spaces.flatten``: its one-hot (float32)."""
    return jax.nn.one_hot(index, n, dtype=jnp.float32)


def signed(correct: jax.Array, scale: float) -> jax.Array:
    """``+scale`` where ``correct``, else ``-scale`` (float32): popgym's reward for a right or wrong answer."""
    return jnp.where(correct, scale, -scale).astype(jnp.float32)


def pick(key: jax.Array, allowed: jax.Array) -> jax.Array:
    """The index of an entry of the flat boolean ``allowed``, drawn uniformly among the true ones from one uniform
    draw (by its inverse distribution: the ``floor(u * count)``-th true entry). At least one must be true."""
    count = allowed.sum()
    k = jnp.minimum(jnp.floor(jax.random.uniform(key) * count).astype(jnp.int32), count - 1)
    return jnp.argmax(jnp.cumsum(allowed) > k)


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")


def shuffle_step(key: jax.Array, spare: jax.Array, time: jax.Array) -> jax.Array:
    """One swap of a Fisher-Yates shuffle of ``spare`` in place, the ``time``-th (1, 2, ...): position ``n - time``
    swapped with one drawn uniformly from ``0 .. n - time``. The first ``n - 1`` of them leave a uniformly random
    permutation of whatever ``spare`` held, independent of it; later ones do nothing."""
    i = jnp.maximum(spare.shape[0] - time, 0)
    j = jax.random.randint(key, (), 0, i + 1)
    return spare.at[i].set(spare[j]).at[j].set(spare[i])


class DeckState(NamedTuple):
    deck: jax.Array  # (52 * decks,) int32: the cards in the order they are dealt
    time: jax.Array  # int32: steps taken; the card shown is deck[time]
    spare: jax.Array  # (52 * decks,) int32: the next episode's deck, being shuffled a swap a step


class DeckGame(Env):
    """A game of one shuffled deck, dealt a card a step, which shows the ``shown`` (suit, colour or rank) of the
    card dealt last and ends (terminated) with the last card, ``52 * decks - 1`` steps after the reset's.

    Only the first reset shuffles a whole deck: each step shuffles the next episode's deck a swap further
    (``shuffle_step``), and an episode of at least ``52 * decks - 1`` steps leaves it shuffled (``restart``)."""

    decks: int = 1
    shown: ClassVar[str] = "suits"

    def __post_init__(self) -> None:
        check_positive_int("decks", self.decks)

    obs_size = property(lambda self: KINDS[self.shown])
    max_steps = property(lambda self: PACK * self.decks - 1)

    def observe(self, state: DeckState) -> jax.Array:
        return one_hot(value(state.deck[state.time], self.shown), KINDS[self.shown])

    def start(self, deck: jax.Array, spare: jax.Array | None = None) -> DeckState:
        """The state after the reset's deal from ``deck`` (the cards in the order dealt)."""
        deck = jnp.asarray(deck, jnp.int32)
        spare = jnp.arange(deck.shape[0], dtype=jnp.int32) if spare is None else spare
        return DeckState(deck, jnp.zeros((), jnp.int32), spare)

    def reset(self, key):
        state = self.start(shuffled(key, self.decks))
        return self.observe(state), state

    def restart(self, key, state):
        fresh = self.start(state.spare, state.deck)
        return self.observe(fresh), fresh

    def dealt(self, key: jax.Array, state: DeckState, reward: jax.Array):
        """The next card dealt after a step that earned ``reward`` (and the spare deck shuffled a swap further):
        ``transition``'s result."""
        time = state.time + 1
        state = DeckState(state.deck, time, shuffle_step(key, state.spare, time))
        return self.observe(state), state, reward, state.time >= self.max_steps, jnp.zeros((), bool)
