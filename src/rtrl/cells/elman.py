"""Elman RNN (seed 000), row-vector convention, with its closed-form RTRL traces.

Forward, for input row ``x`` (D,) and previous carry ``h`` (N,)::

    s = x @ W + B + h @ R          W (D, N), B (N,), R (N, N)
    h' = act(s)                    carry and output are both h'

Closed-form traces (derivation: docs/derivations.md). The traces are the sensitivities of the carry,
``P_W[k, i, j] = dh_k / dW_ij`` (N, D, N), ``P_B[k, j] = dh_k / dB_j`` (N, N), ``P_R[k, i, j] = dh_k / dR_ij``
(N, N, N); with ``d = act'(s)`` and ``(R^T P)[k, ...] = sum_n R[n, k] P[n, ...]``::

    P_W'[k, i, j] = d_k * ( (R^T P_W)[k, i, j] + [k == j] x_i )
    P_B'[k, j]    = d_k * ( (R^T P_B)[k, j]    + [k == j]     )
    P_R'[k, i, j] = d_k * ( (R^T P_R)[k, i, j] + [k == j] h_i )

and a credit ``g = dL/dh`` turns into ``dL/dtheta = sum_k g_k P_theta[k, ...]``. They start at zero: the initial
carry does not depend on the parameters.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell, Params, activation


class Elman(Cell):
    """``h' = act(x @ W + B + h @ R)``; ``activation`` is one of tanh (default), sigmoid, relu, identity."""

    activation: str = "tanh"

    def __post_init__(self) -> None:
        super().__post_init__()
        activation(self.activation)  # validates the name

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.hidden_size
        return {"W": (D, N), "B": (N,), "R": (N, N)}

    def init_param(self, name, shape, key, dtype):
        if name == "R":  # orthogonal (scaled by 0.9): early gradients neither vanish nor explode
            return 0.9 * jax.random.orthogonal(key, shape[0]).astype(dtype)
        return super().init_param(name, shape, key, dtype)

    def preactivation(self, params: Params, h: jax.Array, x: jax.Array) -> jax.Array:
        self.check_input(x)
        self.check_params(params, self.param_shapes())
        return x @ params["W"] + params["B"] + h @ params["R"]

    def step(self, params: Params, carry: jax.Array, x: jax.Array):
        h = activation(self.activation).fn(self.preactivation(params, carry, x))
        return h, h

    def output(self, params: Params, carry: jax.Array, x: jax.Array) -> jax.Array:
        return carry

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_init(self, params: Params, carry: jax.Array) -> Params:
        N = self.hidden_size
        return {name: jnp.zeros((N,) + shape, carry.dtype) for name, shape in self.param_shapes().items()}

    def trace_update(self, params: Params, carry: jax.Array, traces: Params, x: jax.Array) -> Params:
        d = activation(self.activation).derivative(self.preactivation(params, carry, x))
        R = params["R"]
        eye = jnp.eye(self.hidden_size, dtype=carry.dtype)

        def recur(P):  # (R^T P)[k, ...] = sum_n R[n, k] P[n, ...]
            return jnp.tensordot(R.T, P, axes=1)

        return {
            "W": d[:, None, None] * (recur(traces["W"]) + eye[:, None, :] * x[None, :, None]),
            "B": d[:, None] * (recur(traces["B"]) + eye),
            "R": d[:, None, None] * (recur(traces["R"]) + eye[:, None, :] * carry[None, :, None]),
        }

    def trace_contract(self, params: Params, traces: Params, g_carry: jax.Array) -> Params:
        return {name: jnp.tensordot(g_carry, P, axes=1) for name, P in traces.items()}
