"""popgym's MultiarmedBandit: arms that pay with probabilities drawn per episode; find the best and keep pulling it.

* Reset draws each of ``arms`` arms' probability of paying, uniform in [0, 1) (float32). Observation: 0
  (``Discrete(2)``, one-hot).
* The action pulls an arm: it pays where the step's draw (``draw(key)``, uniform in [0, 1), float32) is below its
  probability. Observation: 1 if it paid, else 0; reward ``+1 / length`` if it paid, else ``-1 / length``.
* The episode is truncated after ``length`` steps (nothing terminates it).
* Easy: 10 arms, 200 steps; Medium: 20, 400; Hard: 30, 600.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env
from rtrl.rl.envs.popgym import cards as C


class BanditState(NamedTuple):
    odds: jax.Array  # (arms,) float32: each arm's probability of paying
    time: jax.Array  # int32: steps taken


class MultiarmedBandit(Env):
    arms: int = 10
    length: int = 200

    def __post_init__(self) -> None:
        check_positive_int("arms", self.arms)
        check_positive_int("length", self.length)

    name = property(lambda self: f"popgym MultiarmedBandit(arms={self.arms}, length={self.length})")
    obs_size = 2
    num_actions = property(lambda self: self.arms)
    max_steps = property(lambda self: self.length)

    def draw(self, key: jax.Array) -> jax.Array:
        """The step's draw: the arm pulled pays where it is below the arm's probability."""
        return jax.random.uniform(key, dtype=jnp.float32)

    def reset(self, key):
        state = BanditState(jax.random.uniform(key, (self.arms,), jnp.float32), jnp.zeros((), jnp.int32))
        return C.one_hot(0, 2), state

    def transition(self, key, state, action):
        paid = self.draw(key) < state.odds[action]
        time = state.time + 1
        done = time >= self.length
        return C.one_hot(paid.astype(jnp.int32), 2), BanditState(state.odds, time), \
            C.signed(paid, 1.0 / self.length), done, done
