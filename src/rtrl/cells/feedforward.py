"""A memoryless cell, the baseline of a memory task: ``h' = act(x @ W + B)``, the previous carry ignored.

With it in the torso, an agent sees only the current observation, on the same budget, heads and update as a
recurrent one (``rtrl rl --cell feedforward``; the ``-memoryless`` rows of docs/rl-results.md). Every trace method
applies and is exact: nothing flows through the carry, so the traces hold the last step's direct gradient only.
"""

from __future__ import annotations

import jax

from rtrl.cells.base import Cell, Params, activation


class FeedForward(Cell):
    """``h' = act(x @ W + B)`` (no recurrence); ``activation`` is one of tanh (default), sigmoid, relu, identity."""

    activation: str = "tanh"

    def __post_init__(self) -> None:
        super().__post_init__()
        activation(self.activation)  # validates the name

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"W": (self.input_size, self.hidden_size), "B": (self.hidden_size,)}

    def step(self, params: Params, carry: jax.Array, x: jax.Array):
        self.check_input(x)
        self.check_params(params, self.param_shapes())
        h = activation(self.activation).fn(x @ params["W"] + params["B"])
        return h, h

    def output(self, params: Params, carry: jax.Array, x: jax.Array) -> jax.Array:
        return carry
