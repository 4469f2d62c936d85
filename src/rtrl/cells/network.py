"""A deep recurrent network: residual blocks of normalisation, a recurrent cell and a mixing layer.

For blocks ``0 .. L-1`` with cells ``layers[i]`` (any cell, each reading the block width ``H``), one step is::

    x_0 = x @ W_in + b_in          (the encoder; only where input_size != H, else x_0 = x)
    y_i = norm(x_i)                                   "layer" (default), "rms" or "none"
    carry'[i], o_i = layers[i].step(params["block{i}"]["cell"], carry[i], y_i)
    x_{i+1} = x_i + mix(params["block{i}"]["mix"], o_i)
    h = x_L                                           (width H = hidden_size)

with ``mix`` one of (``a = gelu(o)``, ``o`` of the cell's width)::

    "glu" (default):  (a @ W + b) * sigmoid(a @ V + c)          W, V (cell width, H), b, c (H,)
    "mlp":            gelu(o @ W1 + b1) @ W2 + b2               W1 (cell width, 2H), W2 (2H, H)
    "gelu":           a                                         (the cell's width must be H)

The normalisation has no scale or shift: the cell's own input projection would absorb them (and a parameter
below a cell inside its block would make layer-local traces inexact even for one block). The carry is the tuple
of the cells' carries, so every method applies: dense ``rtrl`` gives the exact gradient (dense even when every
cell is element-wise: a lower block's parameters reach the upper cells through the residual stream), and
``layer_local`` (``rtrl.methods.LayerLocal``) keeps each cell's own traces (see docs/methods.md).

``Stack`` is the plain composition of cells (each reads the previous one's output); ``Network`` is a separate
class because its blocks add parameters outside the cells (encoder, mixing) and a residual stream. Both expose the
layered protocol (``rtrl.capabilities.Layered``) that ``layer_local`` reads: ``layers``, ``layer_params(params)``,
``layer_inputs(params, carry, x)`` (each cell's input at this step) and ``from_layer_grads(params, grads)``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from rtrl.cells.adapters import cell_factory
from rtrl.cells.base import Carry, Cell, Params, check_member_carry, check_member_params, init_params, member_cells
from rtrl.cells.lru import LRU
from rtrl.cells.rtu import RTU
from rtrl.checks import check_positive_int, default_dtype

NORMS = ("layer", "rms", "none")
MIXES = ("glu", "mlp", "gelu")
EPS = 1e-5


def block_name(i: int) -> str:
    return f"block{i}"


def normalise(kind: str, x: jax.Array) -> jax.Array:
    if kind == "layer":
        x = x - x.mean(-1, keepdims=True)
    if kind == "none":
        return x
    return x * jax.lax.rsqrt((x**2).mean(-1, keepdims=True) + EPS)


def mix_shapes(kind: str, n: int, H: int) -> dict[str, tuple[int, ...]]:
    if kind == "glu":
        return {"W": (n, H), "b": (H,), "V": (n, H), "c": (H,)}
    if kind == "mlp":
        return {"W1": (n, 2 * H), "b1": (2 * H,), "W2": (2 * H, H), "b2": (H,)}
    return {}


def mix(kind: str, p: Params, o: jax.Array) -> jax.Array:
    if kind == "mlp":
        return jax.nn.gelu(o @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
    a = jax.nn.gelu(o)
    if kind == "glu":
        return (a @ p["W"] + p["b"]) * jax.nn.sigmoid(a @ p["V"] + p["c"])
    return a


class Network(Cell):
    """``Network(layers=(cell, ...), input_size=None, norm="layer", mix="glu")``; the block width ``H`` is the
    cells' ``input_size``, ``input_size`` defaults to ``H`` (no encoder); see the module docstring."""

    input_size: int | None = None
    hidden_size: int = dataclasses.field(init=False)
    layers: tuple[Cell, ...] = ()
    norm: str = "layer"
    mix: str = "glu"

    def __post_init__(self) -> None:
        layers = member_cells("layers", self.layers, " (at least one block)")
        H = layers[0].input_size
        for i, cell in enumerate(layers):
            if cell.input_size != H:
                raise ValueError(f"layers[{i}].input_size must equal the block width {H} (every cell reads the "
                                 f"normalised residual stream of width layers[0].input_size), got {cell.input_size}")
            if self.mix == "gelu" and cell.hidden_size != H:
                raise ValueError(f"layers[{i}].hidden_size must equal the block width {H} with mix='gelu' (its "
                                 f"output joins the residual stream as it is), got {cell.hidden_size}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {list(NORMS)}, got {self.norm!r}")
        if self.mix not in MIXES:
            raise ValueError(f"mix must be one of {list(MIXES)}, got {self.mix!r}")
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "hidden_size", H)
        if self.input_size is None:
            object.__setattr__(self, "input_size", H)
        check_positive_int("input_size", self.input_size)

    @property
    def encoded(self) -> bool:
        return self.input_size != self.hidden_size

    def param_shapes(self) -> dict:
        shapes = {block_name(i): {"cell": cell.param_shapes(), "mix": mix_shapes(self.mix, cell.hidden_size,
                                                                                  self.hidden_size)}
                  for i, cell in enumerate(self.layers)}
        if self.encoded:
            shapes["encoder"] = {"W": (self.input_size, self.hidden_size), "b": (self.hidden_size,)}
        return shapes

    def init(self, key: jax.Array, dtype=None) -> Params:
        dtype = default_dtype(dtype)
        keys = jax.random.split(key, len(self.layers) + 1)
        params = {block_name(i): {"cell": cell.init(k, dtype),
                                  "mix": init_params(mix_shapes(self.mix, cell.hidden_size, self.hidden_size),
                                                    jax.random.fold_in(k, 1), dtype)}
                  for i, (cell, k) in enumerate(zip(self.layers, keys[1:], strict=True))}
        if self.encoded:
            params["encoder"] = init_params({"W": (self.input_size, self.hidden_size), "b": (self.hidden_size,)},
                                           keys[0], dtype)
        return params

    def initial_carry(self, batch_shape: tuple[int, ...] = (), dtype=None) -> Carry:
        return tuple(cell.initial_carry(batch_shape, dtype) for cell in self.layers)

    def check_params(self, params, shapes=None) -> None:
        check_member_params(params, sorted(self.param_shapes()), f"this {len(self.layers)}-block Network")

    def forward(self, params: Params, carry: Carry, x: jax.Array) -> tuple[Carry, jax.Array, tuple]:
        """``(carry', h, inputs)``: one step, and the input each cell read (the layered protocol's)."""
        self.check_input(x)
        self.check_params(params)
        check_member_carry(carry, len(self.layers), f"a {len(self.layers)}-block Network", "cells")
        if self.encoded:
            x = x @ params["encoder"]["W"] + params["encoder"]["b"]
        carries, inputs = [], []
        for i, (cell, c) in enumerate(zip(self.layers, carry, strict=True)):
            p = params[block_name(i)]
            y = normalise(self.norm, x)
            c, o = cell.step(p["cell"], c, y)
            x = x + mix(self.mix, p["mix"], o)
            carries.append(c)
            inputs.append(y)
        return tuple(carries), x, tuple(inputs)

    def step(self, params: Params, carry: Carry, x: jax.Array):
        return self.forward(params, carry, x)[:2]

    # -- the layered protocol (rtrl.capabilities.Layered), read by rtrl.methods.LayerLocal --------------------
    def layer_params(self, params: Params) -> tuple:
        return tuple(params[block_name(i)]["cell"] for i in range(len(self.layers)))

    def layer_inputs(self, params: Params, carry: Carry, x: jax.Array) -> tuple:
        return self.forward(params, carry, x)[2]

    def from_layer_grads(self, params: Params, grads: tuple) -> Params:
        """The gradient of all parameters: the cells' from ``grads``, zeros for the encoder and mixing layers."""
        out = jax.tree.map(jnp.zeros_like, params)
        for i, g in enumerate(grads):
            out[block_name(i)]["cell"] = g
        return out


@cell_factory
def lru_network(input_size: int, hidden_size: int, depth: int = 2, cell: str = "lru", r_min: float = 0.9,
                r_max: float = 0.999, norm: str = "layer") -> Network:
    """``depth`` residual blocks of LRU (or RTU) cells of width ``hidden_size``, with poles on the ring
    ``r_min .. r_max`` (long memory from the start), reading inputs of ``input_size``: the deep network of the
    results' presets (``--cell rtrl.cells.network:lru_network``)."""
    cls = {"lru": LRU, "rtu": RTU}[cell]
    return Network(layers=tuple(cls(hidden_size, hidden_size, r_min=r_min, r_max=r_max) for _ in range(depth)),
                   input_size=input_size, norm=norm)
