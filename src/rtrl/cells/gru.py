"""Gated recurrent unit (Cho et al. 2014), row-vector convention: a dense gated cell for the approximations.

Forward, for input row ``x`` (D,) and previous carry ``h`` (N,)::

    z  = sigmoid(x @ W_z + h @ U_z + b_z)          update gate
    r  = sigmoid(x @ W_r + h @ U_r + b_r)          reset gate
    n  = tanh(x @ W_n + (r * h) @ U_n + b_n)       candidate
    h' = (1 - z) * n + z * h                       carry and output are both h'

``W_* (D, N)``, ``U_* (N, N)``, ``b_* (N,)``. The reset gate multiplies ``h`` before ``U_n`` (the original
formulation; PyTorch applies it after). The recurrence is dense (every ``h'_k`` depends on every ``h_j``), so
its exact traces are those of the generic ``rtrl`` method; the cell provides no closed form.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell, Params

GATES = ("z", "r", "n")


class GRU(Cell):
    """``h' = (1 - z) * n + z * h`` with update gate ``z``, reset gate ``r`` and candidate ``n``."""

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.hidden_size
        shapes = {}
        for g in GATES:
            shapes.update({f"W_{g}": (D, N), f"U_{g}": (N, N), f"b_{g}": (N,)})
        return shapes

    def init_param(self, name, shape, key, dtype):
        """Orthogonal recurrent weights ``U_*``; the default (Glorot matrices, zero biases) for the rest."""
        if name.startswith("U_"):
            return jax.random.orthogonal(key, shape[0]).astype(dtype)
        return super().init_param(name, shape, key, dtype)

    def step(self, params: Params, carry: jax.Array, x: jax.Array):
        self.check_input(x)
        self.check_params(params, self.param_shapes())
        p, h = params, carry
        z = jax.nn.sigmoid(x @ p["W_z"] + h @ p["U_z"] + p["b_z"])
        r = jax.nn.sigmoid(x @ p["W_r"] + h @ p["U_r"] + p["b_r"])
        n = jnp.tanh(x @ p["W_n"] + (r * h) @ p["U_n"] + p["b_n"])
        h = (1.0 - z) * n + z * h
        return h, h

    def output(self, params: Params, carry: jax.Array, x: jax.Array) -> jax.Array:
        return carry
