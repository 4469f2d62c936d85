"""popgym's deck of cards (``popgym.core.deck.Deck``) as integers, and what the card games share.

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


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")


class DeckState(NamedTuple):
    deck: jax.Array  # (52 * decks,) int32: the cards in the order they are dealt
    time: jax.Array  # int32: steps taken; the card shown is deck[time]


class DeckGame(Env):
    """A game of one shuffled deck, dealt a card a step, which shows the ``shown`` (suit, colour or rank) of the
    card dealt last and ends (terminated) with the last card, ``52 * decks - 1`` steps after the reset's."""

    decks: int = 1
    shown: ClassVar[str] = "suits"

    def __post_init__(self) -> None:
        check_positive_int("decks", self.decks)

    obs_size = property(lambda self: KINDS[self.shown])
    max_steps = property(lambda self: PACK * self.decks - 1)

    def observe(self, state: DeckState) -> jax.Array:
        return one_hot(value(state.deck[state.time], self.shown), KINDS[self.shown])

    def reset(self, key):
        state = DeckState(shuffled(key, self.decks), jnp.zeros((), jnp.int32))
        return self.observe(state), state

    def dealt(self, state: DeckState, reward: jax.Array):
        """The next card dealt after a step that earned ``reward``: ``transition``'s result."""
        state = DeckState(state.deck, state.time + 1)
        return self.observe(state), state, reward, state.time >= self.max_steps, jnp.zeros((), bool)
