"""popgym's Autoencode: watch the deck dealt card by card, then play the suits back in reverse order.

* Reset shuffles ``decks`` packs and deals the first card. Observation: ``(watching, suit)`` (``Tuple(Discrete(2),
  Discrete(4))`` flattened: two one-hots), ``watching`` 1 while cards are being dealt.
* Watching: each step deals the next card and shows it, rewarding 0 whatever the action; the step that deals the
  last card shows it with ``watching`` 0 (the playback begins).
* Playing: each step's action (a suit) is rewarded ``+1 / (52 * decks)`` if it is the suit of the latest card not yet
  played back, else the same amount negative; the observation is ``(0, 0)``. The episode ends (terminated) when
  the first card has been played back, after ``2 * 52 * decks - 1`` steps.
* Easy: 1 pack; Medium: 2; Hard: 3.
"""

from __future__ import annotations

import jax.numpy as jnp

from rtrl.rl.envs.popgym import cards as C


class Autoencode(C.DeckGame):
    decks: int = 1

    name = property(lambda self: f"popgym Autoencode(decks={self.decks})")
    obs_size = 6
    num_actions = 4
    cards = property(lambda self: C.PACK * self.decks)
    max_steps = property(lambda self: 2 * self.cards - 1)

    def observe(self, state):
        t = state.time
        watching = t < self.cards - 1
        suit = jnp.where(t < self.cards, C.value(state.deck[jnp.minimum(t, self.cards - 1)], "suits"), 0)
        return jnp.concatenate([C.one_hot(watching.astype(jnp.int32), 2), C.one_hot(suit, 4)])

    def transition(self, key, state, action):
        played = state.time + 1 - self.cards  # the cards played back before this step (negative: still watching)
        target = C.value(state.deck[jnp.clip(self.cards - 1 - played, 0, self.cards - 1)], "suits")
        return self.dealt(key, state, jnp.where(played >= 0, C.signed(action == target, 1.0 / self.cards), 0.0))
