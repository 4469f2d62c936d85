"""popgym's RepeatPrevious: name the suit of the card dealt ``k`` steps before the one in hand.

* Reset shuffles ``decks`` packs and deals the first card; observation: its suit (``Discrete(4)``, one-hot).
* Step ``t`` (1, 2, ...): from ``t = k`` on, the action (a suit) is rewarded ``+1 / (52 * decks - k)`` if it is the
  suit of card ``t - k`` (counting the first as 0), else the same amount negative; earlier steps reward 0. Then card
  ``t`` is dealt and shown. The episode ends (terminated) at ``t = 52 * decks - 1``, the last card dealt.
* Easy: 1 pack, ``k = 4``; Medium: 2, 32; Hard: 3, 64.
"""

from __future__ import annotations

import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.popgym import cards as C


class RepeatPrevious(C.DeckGame):
    decks: int = 1
    k: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive_int("k", self.k)
        if self.k >= C.PACK * self.decks:
            raise ValueError(f"k must be less than the {C.PACK * self.decks} cards of {self.decks} pack(s), "
                             f"got {self.k}")

    name = property(lambda self: f"popgym RepeatPrevious(decks={self.decks}, k={self.k})")
    num_actions = 4

    def transition(self, key, state, action):
        t = state.time + 1  # the cards dealt so far
        target = C.value(state.deck[jnp.maximum(t - self.k, 0)], "suits")
        scale = 1.0 / (C.PACK * self.decks - self.k)
        return self.dealt(key, state, jnp.where(t >= self.k, C.signed(action == target, scale), 0.0))
