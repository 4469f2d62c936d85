"""The stream-x body as an encoder before a recurrent cell (Elsayed, Vasan & Mahmood 2024, "Streaming deep
reinforcement learning finally works"; their code: mohmdelsayed/streaming-drl).

``Encoded(input_size, cell)`` reads inputs of ``input_size``, encodes them to the cell's ``input_size`` (the
encoder's width ``M``) and steps the cell on the code. One step, one example, input row ``x`` (D,)::

    a  = x @ W + b                                    W (D, M) sparse, b (M,) zeros
    e  = leaky_relu(layer_norm(a))                    layer_norm(a) = (a - mean(a)) / sqrt(var(a) + 1e-5),
                                                      no affine parameters; leaky_relu(y) = max(y, slope * y)
    carry', h = cell.step(params["cell"], carry, e)

Parameters ``{"encoder": {"W", "b"}, "cell": <the cell's>}``. Sparse initialisation (their ``sparse_init``): each
unit of the code reads ``ceil(sparsity * D)`` zero weights, the rest uniform in ``[-1/sqrt(D), 1/sqrt(D)]``, and
at least one non-zero (their rule zeroes every weight of a unit where ``D`` is small: MemoryChain's D = 3 at
sparsity 0.9); the cell's own parameters are initialised as the cell does.

The encoder has no recurrence, but its parameters reach the carry through every past input, so exact RTRL needs
their traces. Where the cell is element-wise (``rtrl.capabilities.ElementwiseRecurrence``) with hand-derived
traces (``HandDerivedTraces``: the minGRU, LRU, RTU, ...), ``Encoded`` has hand-derived traces too (so ``auto``
takes ``closed_form``): the cell's own, on its input ``e``, and for the encoder, per carry leaf ``t`` (N,), with
``J[t, s]`` the per-neuron Jacobian ``dc'_t / dc_s`` and ``B[t, P]`` the per-neuron ``dc'_t / du_P`` of the cell's
``recur`` (``u_P = e @ P`` for each projection ``P`` (M, N))::

    G_P     = dU_P / da          (N, M): row n = J_f^T P[:, n], J_f = de/da  (one vjp per neuron)
    C_t     = sum_P B[t, P] * G_P                                       (N, M)
    E'[W][t] = sum_s J[t, s] * E[W][s] + C_t[:, None, :] * x[None, :, None]      (N, D, M)
    E'[b][t] = sum_s J[t, s] * E[b][s] + C_t                                     (N, M)

and a credit ``g`` on the new carry gives ``dL/dW = sum_t sum_n g_t[n] E[W][t][n]`` (and ``b`` alike). Memory:
``N (D + 1) M`` floats per carry leaf, besides the cell's traces. For any other cell the generic exact methods
(``rtrl``, and ``auto`` choosing it) apply through ``step``.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from rtrl.capabilities import ElementwiseRecurrence, HandDerivedTraces, HasOutput
from rtrl.cells.adapters import cell_factory
from rtrl.cells.base import Carry, Cell, Params
from rtrl.checks import check_positive_int, default_dtype

LAYER_NORM_EPS = 1e-5  # torch's F.layer_norm default, as stream-x uses it


def sparse_init(key: jax.Array, shape: tuple[int, int], sparsity: float, dtype) -> jax.Array:
    """A (D, M) matrix: each column (a unit of the code) with ``min(ceil(sparsity * D), D - 1)`` zeros at random
    rows, the other entries uniform in ``[-1/sqrt(D), 1/sqrt(D)]``."""
    D, M = shape
    k_values, k_rows = jax.random.split(key)
    bound = 1.0 / math.sqrt(D)
    values = jax.random.uniform(k_values, shape, dtype, -bound, bound)
    zeros = min(math.ceil(sparsity * D), D - 1)
    ranks = jnp.argsort(jax.random.uniform(k_rows, shape), axis=0).argsort(axis=0)  # a random permutation per column
    return jnp.where(ranks < zeros, jnp.zeros((), dtype), values)


def layer_norm(a: jax.Array) -> jax.Array:
    """``(a - mean) / sqrt(var + eps)`` over the last axis, without affine parameters."""
    mean = a.mean(axis=-1, keepdims=True)
    var = ((a - mean) ** 2).mean(axis=-1, keepdims=True)
    return (a - mean) / jnp.sqrt(var + LAYER_NORM_EPS)


def block(a: jax.Array, slope: float = 0.01) -> jax.Array:
    """``leaky_relu(layer_norm(a))`` of a pre-activation ``a``: the stream-x block's non-linearity."""
    y = layer_norm(a)
    return jnp.where(y >= 0, y, slope * y)


class Encoded(Cell):
    """``Encoded(input_size, cell, sparsity=0.9, slope=0.01)``; see the module docstring. ``hidden_size`` is the
    cell's, and the encoder's width is the cell's ``input_size``."""

    hidden_size: int = dataclasses.field(init=False)
    cell: Cell | None = None
    sparsity: float = 0.9
    slope: float = 0.01

    def __post_init__(self) -> None:
        if not isinstance(self.cell, Cell):
            raise ValueError(f"cell must be an rtrl cell (rtrl.cells.*), got {self.cell!r}")
        object.__setattr__(self, "hidden_size", self.cell.hidden_size)
        super().__post_init__()
        if not (isinstance(self.sparsity, int | float) and 0 <= self.sparsity < 1):
            raise ValueError(f"sparsity must be a number in [0, 1), got {self.sparsity!r}")
        if not (isinstance(self.slope, int | float) and 0 <= self.slope <= 1):
            raise ValueError(f"slope (the leaky ReLU's negative slope) must be a number in [0, 1], got {self.slope!r}")
        if isinstance(self.cell, HasOutput):
            object.__setattr__(self, "output", self.encoded_output)
        if isinstance(self.cell, ElementwiseRecurrence) and isinstance(self.cell, HandDerivedTraces):
            for name in ("init", "update", "contract", "to_params"):
                object.__setattr__(self, "trace_" + name, getattr(self, "closed_form_" + name))

    @property
    def width(self) -> int:
        return self.cell.input_size

    def encoder_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"W": (self.input_size, self.width), "b": (self.width,)}

    def init(self, key: jax.Array, dtype=None) -> Params:
        k_encoder, k_cell = jax.random.split(key)
        params = self.cell.init(k_cell, dtype)
        dtype = jax.tree.leaves(params)[0].dtype
        return {"encoder": {"W": sparse_init(k_encoder, (self.input_size, self.width), self.sparsity, dtype),
                            "b": jnp.zeros((self.width,), dtype)}, "cell": params}

    def initial_carry(self, batch_shape: tuple[int, ...] = (), dtype=None) -> Carry:
        return self.cell.initial_carry(batch_shape, dtype)

    def activation(self, a: jax.Array) -> jax.Array:
        """``e`` from the encoder's pre-activation ``a``."""
        return block(a, self.slope)

    def encode(self, encoder: Params, x: jax.Array) -> jax.Array:
        return self.activation(x @ encoder["W"] + encoder["b"])

    def step(self, params: Params, carry: Carry, x: jax.Array):
        self.check_input(x)
        if not isinstance(params, dict) or set(params) != {"encoder", "cell"}:
            raise ValueError(f"params of {self.name} must be a dict with keys ['cell', 'encoder'], got "
                             f"{sorted(params) if isinstance(params, dict) else type(params).__name__}")
        self.check_params(params["encoder"], self.encoder_shapes())
        return self.cell.step(params["cell"], carry, self.encode(params["encoder"], x))

    def encoded_output(self, params: Params, carry: Carry, x: jax.Array) -> jax.Array:
        """``h`` of a cell with ``output`` (``rtrl.capabilities.HasOutput``), read on the code of ``x``."""
        return self.cell.output(params["cell"], carry, self.encode(params["encoder"], x))

    # -- hand-derived traces, where the cell is element-wise with its own (see the module docstring) -------------
    def closed_form_init(self, params: Params, carry: Carry) -> Params:
        D, M = self.input_size, self.width
        dtype = jax.tree.leaves(carry)[0].dtype
        zeros = {"W": jax.tree.map(lambda c: jnp.zeros((*c.shape, D, M), dtype), carry),
                 "b": jax.tree.map(lambda c: jnp.zeros((*c.shape, M), dtype), carry)}
        return {"cell": self.cell.trace_init(params["cell"], carry), "encoder": zeros}

    def closed_form_update(self, params: Params, carry: Carry, traces: Params, x: jax.Array) -> Params:
        cell = self.cell
        a = x @ params["encoder"]["W"] + params["encoder"]["b"]
        e, pullback = jax.vjp(self.activation, a)
        vectors, projections = cell.split_params(params["cell"])
        u = cell.project(projections, e)
        leaves, tree = jax.tree.flatten(carry)

        def tangent(i):  # the per-neuron derivatives of every new carry leaf, along one-hot tangents (element-wise)
            dc = jax.tree.unflatten(tree, [jnp.ones_like(c) if j == i else jnp.zeros_like(c)
                                           for j, c in enumerate(leaves)])
            du = {name: jnp.ones_like(v) if name == i else jnp.zeros_like(v) for name, v in u.items()}
            return jax.tree.leaves(jax.jvp(lambda c, v: cell.recur(vectors, c, v), (carry, u), (dc, du))[1])

        J = [tangent(s) for s in range(len(leaves))]  # J[s][t]: dc'_t / dc_s, (N,)
        B = {name: tangent(name) for name in u}  # B[P][t]: dc'_t / du_P
        G = {name: jax.vmap(lambda w: pullback(w)[0])(P.T) for name, P in projections.items()}  # (N, M)
        old_W, old_b = jax.tree.leaves(traces["encoder"]["W"]), jax.tree.leaves(traces["encoder"]["b"])
        new_W, new_b = [], []
        for t in range(len(leaves)):
            C = sum(B[name][t][:, None] * G[name] for name in u)
            new_W.append(sum(J[s][t][:, None, None] * old_W[s] for s in range(len(leaves)))
                         + C[:, None, :] * x[None, :, None])
            new_b.append(sum(J[s][t][:, None] * old_b[s] for s in range(len(leaves))) + C)
        return {"cell": cell.trace_update(params["cell"], carry, traces["cell"], e),
                "encoder": {"W": jax.tree.unflatten(tree, new_W), "b": jax.tree.unflatten(tree, new_b)}}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Carry) -> Params:
        g = jax.tree.leaves(g_carry)
        encoder = {name: sum(jnp.tensordot(gt, e, 1) for gt, e in zip(g, jax.tree.leaves(traces["encoder"][name]),
                                                                        strict=True))
                   for name in ("W", "b")}
        return {"cell": self.cell.trace_contract(params["cell"], traces["cell"], g_carry), "encoder": encoder}

    def closed_form_to_params(self, params: Params, grads: Params) -> Params:
        return {"cell": self.cell.trace_to_params(params["cell"], grads["cell"]), "encoder": grads["encoder"]}


@cell_factory
def encoded(input_size: int, hidden_size: int, cell: str = "mingru", width: int | None = None,
            sparsity: float = 0.9, slope: float = 0.01, **options) -> Encoded:
    """A registered cell (``rtrl.cells.CELLS[cell]``, with ``options``) of ``hidden_size`` behind the stream-x
    encoder of ``width`` units (default: ``hidden_size``): ``--cell rtrl.cells.encoder:encoded --cell-arg
    max_timescale=256``. A ``width`` whose parameters cannot fit in this machine's memory is refused here, before
    anything is allocated (``check_width``)."""
    from rtrl.cells import CELLS  # the registry imports this module's neighbours; read it at call time

    if cell not in CELLS:
        raise ValueError(f"cell must be one of {sorted(CELLS)}, got {cell!r}")
    width = hidden_size if width is None else width
    check_positive_int("width", width)
    encoded = Encoded(input_size, CELLS[cell](width, hidden_size, **options), sparsity=sparsity, slope=slope)
    check_width(encoded)
    return encoded


def check_width(cell: Encoded) -> None:
    """``ValueError`` naming ``width`` when ``cell.init`` cannot fit in memory (``rtrl.devices.available_memory``):
    it needs the parameters (the encoder's ``D x M + M``, the cell's), and while drawing ``W`` the sparse
    initialisation's uniform draw and its ranks, ``D x M`` each, beside them; worked out on shapes alone."""
    from rtrl.devices import available_memory, floats_of, gib

    floats = floats_of(lambda: cell.init(jax.random.PRNGKey(0))) + 2 * cell.input_size * cell.width
    needed, (free, where) = floats * default_dtype().itemsize, available_memory()
    if needed > free:
        raise ValueError(f"width={cell.width:,}: the encoder's initialisation needs at least {gib(needed)} of memory "
                         f"({cell.input_size} x {cell.width:,} weights and the cell's parameters) and this machine "
                         f"has {gib(free)} {where}; choose a smaller width")
