"""popgym's Concentration: cards face down on the table, turned two at a time, a matching pair stays face up.

* Reset shuffles ``decks`` packs onto ``52 * decks`` places, face down. Observation: each place's card, its
  ``kind`` (colour or rank) where face up or turned this turn, else "face down" (``MultiDiscrete([n + 1] * places)``
  flattened: a one-hot of ``n + 1`` per place).
* The action turns the card at a place. Turning a card already matched ends the turn with reward
  ``-1 / L`` times the cards turned this turn (1 or 2), ``L`` the episode's limit; otherwise the first card of a turn
  rewards 0, and the second ends the turn: ``+1 / (26 * decks)`` and both stay face up if the two match (the same
  value at two places), else ``-2 / L`` (the same place twice is no match). The observation shows the cards turned
  by this step's turn, whether or not they stay up.
* The episode ends (terminated) when every card is face up, and is truncated after ``L = ceil(2 n - n / (2 n -
  1))`` steps (``n = 52 * decks``: a perfect player's expected turns, popgym's bound); both can hold at once.
* Easy: 1 pack, colours; Medium: 2 packs, colours; Hard: 1 pack, ranks.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env
from rtrl.rl.envs.popgym import cards as C


class ConcentrationState(NamedTuple):
    board: jax.Array  # (places,) int32: the value of the card at each place
    face_up: jax.Array  # (places,) bool: matched
    first: jax.Array  # int32: the place turned first this turn; -1 at the start of a turn
    time: jax.Array  # int32: steps taken
    spare: jax.Array  # (places,) int32: the next episode's board, shuffled a swap a step (an episode turns every
    # card at least once, so it lasts at least as many steps as there are places)


class Concentration(Env):
    decks: int = 1
    kind: str = "colors"

    def __post_init__(self) -> None:
        check_positive_int("decks", self.decks)
        if self.kind not in ("colors", "ranks"):  # 13 cards a suit: suits do not pair off
            raise ValueError(f"kind must be 'colors' or 'ranks', got {self.kind!r}")

    name = property(lambda self: f"popgym Concentration(decks={self.decks}, kind={self.kind})")
    places = property(lambda self: C.PACK * self.decks)
    distinct = property(lambda self: C.KINDS[self.kind])
    obs_size = property(lambda self: self.places * (self.distinct + 1))
    num_actions = property(lambda self: self.places)
    max_steps = property(lambda self: math.ceil(2 * self.places - self.places / (2 * self.places - 1)))

    def observe(self, board: jax.Array, shown: jax.Array) -> jax.Array:
        return C.one_hot(jnp.where(shown, board, self.distinct), self.distinct + 1).reshape(-1)

    def start(self, cards: jax.Array) -> ConcentrationState:
        """The state after the reset from the cards at each place (popgym's ``deck.idx``)."""
        board = C.value(cards, self.kind)
        return self.laid(board, board)

    def laid(self, board: jax.Array, spare: jax.Array) -> ConcentrationState:
        return ConcentrationState(board, jnp.zeros(self.places, bool), -jnp.ones((), jnp.int32),
                                  jnp.zeros((), jnp.int32), spare)

    def reset(self, key):
        state = self.start(C.shuffled(key, self.decks))
        return self.observe(state.board, state.face_up), state

    def restart(self, key, state):  # the board shuffled along the episode (C.DeckGame)
        fresh = self.laid(state.spare, state.board)
        return self.observe(fresh.board, fresh.face_up), fresh

    def transition(self, key, state, action):
        places = jnp.arange(self.places)
        turned = (places == action) | (places == state.first)
        obs = self.observe(state.board, state.face_up | turned)
        second = state.first >= 0
        again = state.face_up[action]  # a matched card turned: the turn ends
        pair = second & ~again
        match = pair & (state.board[state.first] == state.board[action]) & (state.first != action)
        failure = -1.0 / self.max_steps
        reward = jnp.where(again, jnp.where(second, 2 * failure, failure),
                           jnp.where(pair, jnp.where(match, 1.0 / (self.places // 2), 2 * failure), 0.0))
        face_up = state.face_up | (match & turned)
        time = state.time + 1
        first = jnp.where(again | pair, -1, action).astype(jnp.int32)
        state = ConcentrationState(state.board, face_up, first, time, C.shuffle_step(key, state.spare, time))
        terminated = match & face_up.all()
        truncated = (time >= self.max_steps) & ~terminated
        return obs, state, reward.astype(jnp.float32), terminated | truncated, truncated
