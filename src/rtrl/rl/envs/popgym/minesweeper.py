"""popgym's MineSweeper, the board hidden: uncover cells and hear only how many mines are around each.

* Reset hides ``mines`` mines in distinct cells of a ``size`` x ``size`` board, uniformly. Observation: 0
  (``Discrete(min(mines + 1, 10))``, one-hot).
* The action uncovers the cell ``(a // size, a % size)``. Observation: the mines in the 3 x 3 square around it
  (itself included). Reward: a mine ``-1/2 - 1 / F`` and the episode ends (terminated); a cell uncovered before
  ``-1 / (2 (F - 2))``; a new cell ``+1 / F``, where ``F = size ** 2 - mines`` (the free cells). The episode also
  ends (terminated) when every free cell is uncovered, and is truncated after ``F`` steps.
* Easy: 4 x 4, 2 mines; Medium: 6 x 6, 6; Hard: 8 x 8, 10.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env
from rtrl.rl.envs.popgym import cards as C


class MineSweeperState(NamedTuple):
    mines: jax.Array  # (size, size) bool
    near: jax.Array  # (size, size) int32: the mines in the 3 x 3 square around each cell
    uncovered: jax.Array  # (size, size) bool
    time: jax.Array  # int32: steps taken


MAX_SIZE = 46_340  # the largest board whose size ** 2 cells fit a 32-bit integer


class MineSweeper(Env):
    size: int = 4
    mines: int = 2

    def __post_init__(self) -> None:
        check_positive_int("size", self.size)
        check_positive_int("mines", self.mines)
        if self.size > MAX_SIZE:  # its cells and actions are counted in int32: size ** 2 overflowed in reset
            raise ValueError(f"size must be at most {MAX_SIZE} (a board of size ** 2 cells, one action each, counted "
                             f"in 32-bit integers), got {self.size}")
        if self.mines > self.size ** 2 - 3:  # fewer than 3 free cells: popgym's reward for a repeat divides by 0
            raise ValueError(f"mines must leave at least 3 free cells of the {self.size ** 2}, got {self.mines}")

    name = property(lambda self: f"popgym MineSweeper(size={self.size}, mines={self.mines})")
    obs_size = property(lambda self: min(self.mines + 1, 10))
    num_actions = property(lambda self: self.size ** 2)
    max_steps = property(lambda self: self.size ** 2 - self.mines)

    def start(self, mines: jax.Array) -> MineSweeperState:
        mines = jnp.asarray(mines, bool)
        padded = jnp.pad(mines.astype(jnp.int32), 1)
        n = self.size
        near = sum(padded[i:i + n, j:j + n] for i in range(3) for j in range(3))
        return MineSweeperState(mines, near, jnp.zeros((n, n), bool), jnp.zeros((), jnp.int32))

    def reset(self, key):
        mines = jnp.zeros(self.size ** 2, bool)
        for k in jax.random.split(key, self.mines):  # one at a time, each uniform among the cells left
            mines = mines.at[C.pick(k, ~mines)].set(True)
        mines = mines.reshape(self.size, self.size)
        return C.one_hot(0, self.obs_size), self.start(mines)

    def transition(self, key, state, action):
        cell = (action // self.size, action % self.size)
        mine, seen = state.mines[cell], state.uncovered[cell]
        free = self.max_steps
        reward = jnp.where(mine, -0.5 - 1.0 / free, jnp.where(seen, -0.5 / (free - 2), 1.0 / free))
        uncovered = state.uncovered.at[cell].set(seen | ~mine)
        time = state.time + 1
        terminated = mine | (state.mines | uncovered).all()
        truncated = (time >= free) & ~terminated
        state = MineSweeperState(state.mines, state.near, uncovered, time)
        return C.one_hot(state.near[cell], self.obs_size), state, reward.astype(jnp.float32), \
            terminated | truncated, truncated
