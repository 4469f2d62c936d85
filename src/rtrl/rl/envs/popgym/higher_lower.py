"""popgym's HigherLower: guess whether the next card's rank is higher or lower than the one shown.

* Reset shuffles ``decks`` packs and deals the first card; observation: its rank (``Discrete(13)``, one-hot, ace
  lowest).
* Each step deals the next card: action 0 (higher) or 1 (lower) is rewarded ``+1 / (52 * decks)`` if the new rank
  is higher or lower as guessed, ``-1 / (52 * decks)`` if not, and 0 where the ranks are equal; the new card's rank
  is shown. The episode ends (terminated) with the last card, after ``52 * decks - 1`` steps.
* Easy: 1 pack; Medium: 2; Hard: 3.
"""

from __future__ import annotations

import jax.numpy as jnp

from rtrl.rl.envs.popgym import cards as C


class HigherLower(C.DeckGame):
    decks: int = 1
    shown = "ranks"

    name = property(lambda self: f"popgym HigherLower(decks={self.decks})")
    num_actions = 2

    def transition(self, key, state, action):
        now, following = C.value(state.deck[state.time], "ranks"), C.value(state.deck[state.time + 1], "ranks")
        reward = C.signed((following > now) == (action == 0), 1.0 / (C.PACK * self.decks))
        return self.dealt(key, state, jnp.where(following == now, 0.0, reward))
