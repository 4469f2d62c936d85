"""popgym's Battleship, the board hidden: fire at cells and hear only whether it was a hit.

* Reset places ships of ``ships`` lengths on a ``size`` x ``size`` board, one after another, each across or down,
  uniformly among the placements that stay on the board and touch no ship placed before (popgym's rejection
  sampling draws the same distribution). Observation: 0 (``Discrete(2)``, one-hot).
* The action fires at the cell ``(a // size, a % size)``: a hit where a ship is and the cell was not fired at
  before. Observation: 1 for a hit, else 0; reward ``+1 / H`` for a hit (``H`` the ships' cells), else
  ``-1 / (size ** 2 - H)``.
* The episode ends (terminated) when every ship cell is hit, and is truncated after ``size ** 2`` steps.
* Easy: an 8 x 8 board; Medium: 10 x 10; Hard: 12 x 12; ships of 2, 3, 3 and 4 cells.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import check_positive_int
from rtrl.rl.envs.base import Env
from rtrl.rl.envs.popgym import cards as C


def place(key: jax.Array, board: jax.Array, length: int) -> jax.Array:
    """``board`` with a ship of ``length`` cells added, across or down, uniformly among the placements that stay on
    the board and touch no ship on it."""
    n = board.shape[0]
    taken = jnp.pad(board, ((0, length), (0, length)), constant_values=True)  # off the board counts as taken
    across = ~jnp.stack([taken[:n, k:k + n] for k in range(length)]).any(0)  # [r, c]: (r, c .. c + length - 1) free
    down = ~jnp.stack([taken[k:k + n, :n] for k in range(length)]).any(0)  # [r, c]: (r .. r + length - 1, c) free
    chosen = C.pick(key, jnp.concatenate([across.ravel(), down.ravel()]))
    is_down, r, c = chosen // n ** 2, chosen % n ** 2 // n, chosen % n
    i, j = jnp.arange(n)[:, None], jnp.arange(n)[None, :]
    ship = jnp.where(is_down, (j == c) & (i >= r) & (i < r + length), (i == r) & (j >= c) & (j < c + length))
    return board | ship


class BattleshipState(NamedTuple):
    ships: jax.Array  # (size, size) bool
    fired: jax.Array  # (size, size) bool: the cells fired at
    hits: jax.Array  # int32
    time: jax.Array  # int32: steps taken


class Battleship(Env):
    size: int = 8
    ships: tuple[int, ...] = (2, 3, 3, 4)

    def __post_init__(self) -> None:
        check_positive_int("size", self.size)
        if not self.ships or any(not isinstance(n, int) or not 1 <= n <= self.size for n in self.ships):
            raise ValueError(f"ships must be a non-empty tuple of lengths in [1, size={self.size}], got {self.ships!r}")
        if sum(self.ships) >= self.size ** 2:
            raise ValueError(f"ships must cover fewer than the board's {self.size ** 2} cells, got {self.ships!r}")

    name = property(lambda self: f"popgym Battleship(size={self.size}, ships={list(self.ships)})")
    obs_size = 2
    num_actions = property(lambda self: self.size ** 2)
    max_steps = property(lambda self: self.size ** 2)

    def start(self, ships: jax.Array) -> BattleshipState:
        zero = jnp.zeros((), jnp.int32)
        return BattleshipState(jnp.asarray(ships, bool), jnp.zeros((self.size, self.size), bool), zero, zero)

    def reset(self, key):
        board = jnp.zeros((self.size, self.size), bool)
        for k, length in zip(jax.random.split(key, len(self.ships)), self.ships, strict=True):
            board = place(k, board, length)
        return C.one_hot(0, 2), self.start(board)

    def transition(self, key, state, action):
        cell = (action // self.size, action % self.size)
        hit = state.ships[cell] & ~state.fired[cell]
        hits, time = state.hits + hit, state.time + 1
        needed = sum(self.ships)
        reward = jnp.where(hit, 1.0 / needed, -1.0 / (self.size ** 2 - needed)).astype(jnp.float32)
        terminated = hits == needed
        truncated = (time >= self.size ** 2) & ~terminated
        state = BattleshipState(state.ships, state.fired.at[cell].set(True), hits, time)
        return C.one_hot(hit.astype(jnp.int32), 2), state, reward, terminated | truncated, truncated
