"""A stack of cells: each layer's input is the output of the layer below at the same time step.

For layers ``0 .. L-1`` with parameters ``params["layer{i}"]`` and carries ``carry[i]``, one step is::

    x_0 = x
    carry'[i], x_{i+1} = layers[i].step(params["layer{i}"], carry[i], x_i)
    h' = x_L                                        (the top layer's output)

The carry is the tuple of the layers' carries. Exact RTRL of a stack is dense even when every layer is
element-wise, because a lower layer's parameters reach the upper layers' carries through their inputs; the
``rtrl`` method gives it (sensitivities of the whole carry w.r.t. all parameters), and ``layer_local``
(``rtrl.methods.LayerLocal``) keeps only each layer's own block, through the layered protocol below
(``rtrl.capabilities.Layered``: ``layer_params``, ``layer_inputs``, ``from_layer_grads``; shared with
``rtrl.cells.Network``).
"""

from __future__ import annotations

import dataclasses
import itertools

import jax

from rtrl.cells.base import Carry, Cell, Params, check_member_carry, check_member_params, member_cells


def layer_name(i: int) -> str:
    return f"layer{i}"


class Stack(Cell):
    """``Stack((cell_0, cell_1, ...))``; ``input_size`` and ``hidden_size`` come from the bottom and top layers."""

    layers: tuple[Cell, ...] = ()
    input_size: int = dataclasses.field(init=False)
    hidden_size: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        layers = member_cells("layers", self.layers)
        for i, (lower, upper) in enumerate(itertools.pairwise(layers)):
            if upper.input_size != lower.hidden_size:
                raise ValueError(
                    f"layers[{i + 1}].input_size must equal layers[{i}].hidden_size = {lower.hidden_size} "
                    f"(the upper layer reads the lower layer's output), got {upper.input_size}"
                )
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "input_size", layers[0].input_size)
        object.__setattr__(self, "hidden_size", layers[-1].hidden_size)

    def init(self, key: jax.Array, dtype=None) -> Params:
        keys = jax.random.split(key, len(self.layers))
        return {layer_name(i): cell.init(k, dtype) for i, (cell, k) in enumerate(zip(self.layers, keys, strict=True))}

    def initial_carry(self, batch_shape: tuple[int, ...] = (), dtype=None) -> Carry:
        return tuple(cell.initial_carry(batch_shape, dtype) for cell in self.layers)

    def step(self, params: Params, carry: Carry, x: jax.Array):
        self.check_input(x)
        what = f"a {len(self.layers)}-layer Stack"
        check_member_params(params, [layer_name(i) for i in range(len(self.layers))], what)
        check_member_carry(carry, len(self.layers), what, "layers")
        return self.forward(params, carry, x)[:2]

    def forward(self, params: Params, carry: Carry, x: jax.Array) -> tuple[Carry, jax.Array, tuple]:
        """``(carry', h, inputs)``: one step, and the input each layer read."""
        carries, inputs = [], []
        for i, (cell, c) in enumerate(zip(self.layers, carry, strict=True)):
            inputs.append(x)
            c, x = cell.step(params[layer_name(i)], c, x)
            carries.append(c)
        return tuple(carries), x, tuple(inputs)

    # -- the layered protocol (rtrl.capabilities.Layered), read by rtrl.methods.LayerLocal --------------------
    def layer_params(self, params: Params) -> tuple:
        return tuple(params[layer_name(i)] for i in range(len(self.layers)))

    def layer_inputs(self, params: Params, carry: Carry, x: jax.Array) -> tuple:
        return self.forward(params, carry, x)[2]

    def from_layer_grads(self, params: Params, grads: tuple) -> Params:
        return {layer_name(i): g for i, g in enumerate(grads)}
