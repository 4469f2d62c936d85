"""popgym's RepeatFirst: name the suit of the episode's first card, at every step.

* Reset shuffles ``decks`` packs and deals the first card; observation: its suit (``Discrete(4)``, one-hot).
* Each step rewards ``+1 / (52 * decks - 1)`` if the action (a suit) is the first card's suit, else the same amount
  negative; then the next card is dealt and its suit shown. The episode ends (terminated) with the last card dealt,
  after ``52 * decks - 1`` steps.
* Easy: 1 pack; Medium: 8; Hard: 16.
"""

from __future__ import annotations

from rtrl.rl.envs.popgym import cards as C


class RepeatFirst(C.DeckGame):
    decks: int = 1

    name = property(lambda self: f"popgym RepeatFirst(decks={self.decks})")
    num_actions = 4

    def transition(self, key, state, action):
        return self.dealt(key, state, C.signed(action == C.value(state.deck[0], "suits"), 1.0 / self.max_steps))
