"""A cell with a linear readout and per-example resets, seen as a single cell.

Parameters are ``{"cell": <the cell's>, "readout": {"W": (N, O), "b": (O,)}}``. The input is the cell's input
with one more channel, a reset flag: where it is 1 the carry is zeroed before the step (an episode boundary). So
a sequence method (BPTT, truncated BPTT) run over this model differentiates the readout too, and stops at
episode boundaries inside a window, exactly as the online learner's ``reset`` does::

    carry = 0 where reset;   carry', h = cell.step(params["cell"], carry, x);   y = h @ W + b
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell, Params, glorot
from rtrl.online import zero_where


def init_readout(key: jax.Array, hidden_size: int, output_size: int, dtype) -> Params:
    return {"W": glorot(key, (hidden_size, output_size), dtype), "b": jnp.zeros((output_size,), dtype)}


def readout(params: Params, h: jax.Array) -> jax.Array:
    return h @ params["W"] + params["b"]


class ReadoutModel(Cell):
    """``ReadoutModel(cell, output_size)``: input size ``cell.input_size + 1``, output size ``output_size``."""

    cell: Cell = None

    @classmethod
    def of(cls, cell: Cell, output_size: int) -> ReadoutModel:
        return cls(cell.input_size + 1, output_size, cell)

    def init(self, key: jax.Array, dtype=None) -> Params:
        dtype = dtype or jnp.zeros(()).dtype
        k_cell, k_out = jax.random.split(key)
        return {
            "cell": self.cell.init(k_cell, dtype),
            "readout": init_readout(k_out, self.cell.hidden_size, self.hidden_size, dtype),
        }

    def initial_carry(self, batch_shape=(), dtype=None):
        return self.cell.initial_carry(batch_shape, dtype)

    def step(self, params: Params, carry, x: jax.Array):
        self.check_input(x)
        carry = zero_where(x[..., -1] > 0.5, carry)
        carry, h = self.cell.step(params["cell"], carry, x[..., :-1])
        return carry, readout(params["readout"], h)


def with_reset_flag(xs: jax.Array, done: jax.Array) -> jax.Array:
    """Append the reset channel that ``ReadoutModel`` reads."""
    return jnp.concatenate([xs, done[..., None].astype(xs.dtype)], axis=-1)
