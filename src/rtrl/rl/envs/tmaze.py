"""The T-maze (Bakker 2002), a memory task built here in pure JAX so the RL path is tested without gymnax.

A corridor of ``length`` cells leads from the start (position 0) to a junction (position ``length``). The start
shows a cue, left or right, drawn at reset; nothing else tells the agent which way to turn at the junction.

* Observation (3 floats): ``[cue is left, cue is right, at the junction]``; the cue bits are shown at the start
  only, the junction bit at the junction only (an empty corridor cell is all zeros).
* Actions: ``0`` turn left, ``1`` turn right, ``2`` go forward.
* In the corridor, forward moves one cell on; a turn leaves the agent where it is. At the junction, forward
  leaves it there, and a turn ends the episode with reward ``+1`` if it matches the cue and ``-1`` if not.
* Every other step rewards 0. An episode that reaches ``max_steps`` steps without a turn at the junction ends
  with reward 0 (default ``4 * (length + 1)``): a rule of the task, so a termination (nothing is bootstrapped
  there), not a truncation.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import MAX_COUNT, check_positive_int
from rtrl.rl.envs.base import Env

LEFT, RIGHT, FORWARD = 0, 1, 2


class TMazeState(NamedTuple):
    position: jax.Array  # int32 in [0, length]
    cue: jax.Array  # int32: LEFT or RIGHT
    time: jax.Array  # int32: steps taken in this episode


class TMaze(Env):
    length: int = 10
    max_steps: int | None = None

    def __post_init__(self) -> None:
        check_positive_int("length", self.length)
        if self.max_steps is not None:
            check_positive_int("max_steps", self.max_steps)
            if self.max_steps < self.length + 1:  # no episode could reach the junction and turn: no reward, ever
                raise ValueError(f"max_steps must be at least length + 1 = {self.length + 1} (the corridor, then a "
                                 f"turn), got {self.max_steps}")
        if self.max_steps is None:
            if 4 * (self.length + 1) > MAX_COUNT:  # the step counter is 32-bit
                raise ValueError(f"length must be at most {MAX_COUNT // 4 - 1:,} for the default max_steps = 4 * "
                                 f"(length + 1) to fit in 32 bits, got {self.length:,}; or give max_steps")
            object.__setattr__(self, "max_steps", 4 * (self.length + 1))

    @property
    def name(self) -> str:
        return f"TMaze(length={self.length})"

    obs_size = 3
    num_actions = 3

    def observe(self, state: TMazeState) -> jax.Array:
        start = state.position == 0
        return jnp.stack([start & (state.cue == LEFT), start & (state.cue == RIGHT),
                          state.position == self.length]).astype(jnp.float32)

    def reset(self, key):
        state = TMazeState(jnp.zeros((), jnp.int32), jax.random.bernoulli(key).astype(jnp.int32),
                           jnp.zeros((), jnp.int32))
        return self.observe(state), state

    def transition(self, key, state, action):
        at_junction = state.position == self.length
        turned = at_junction & (action != FORWARD)
        position = jnp.where(~at_junction & (action == FORWARD), state.position + 1, state.position)
        reward = jnp.where(turned, jnp.where(action == state.cue, 1.0, -1.0), 0.0).astype(jnp.float32)
        state = TMazeState(position.astype(jnp.int32), state.cue, state.time + 1)
        done = turned | (state.time >= self.max_steps)
        return self.observe(state), state, reward, done, jnp.zeros((), bool)
