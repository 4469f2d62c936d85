"""minGRU (Feng et al. 2024, "Were RNNs all we needed?"): a gated recurrence whose gate sees only the input.

Forward, one example: input row ``x`` (D,), carry ``h`` (N,)::

    z  = sigmoid(x @ W_z + b_z)                       W_z (D, N), b_z (N,)
    h~ = x @ W_h + b_h                                W_h (D, N), b_h (N,)
    h' = (1 - z) * h + z * h~                         the output is the new carry h'

The recurrence is element-wise and linear in ``h`` with the input-dependent coefficient ``1 - z``, so the cell
stays stable (``0 < 1 - z < 1``) for any parameter value.

Initialisation: ``W_z``, ``W_h`` Glorot-uniform, ``b_h = 0``; ``b_z = 0`` (each neuron keeps half its state a
step: a timescale of 2) unless ``max_timescale = T`` exceeds ``min_timescale = T0`` (default 2): then the chrono
initialisation (Tallec & Ollivier 2018), each neuron's timescale ``tau`` uniform in ``[T0, T]`` and
``b_z = -log(tau - 1)``, so that ``z = 1 / tau`` at a zero input and the state keeps ``1 - 1/tau`` a step: memories
of up to ``T`` steps from the start. ``T0`` below 2 (but above 1) keeps fast neurons too, nearly the input itself
(``tau`` near 1): a difference of a fast and a slow neuron is a rate of change of the input (a velocity where the
input is a position), a linear read-out that neurons of one timescale do not offer.

Closed-form traces (derivation: docs/derivations.md). ``dh'/dh = 1 - z`` per neuron, so each parameter keeps a
trace of its own shape (projections neuron-major, ``(N, D)``), decayed by ``1 - z`` and driven by the immediate
derivative of this step::

    e'[b_h] = (1 - z) e[b_h] + z                      e'[W_h] = (1 - z) e[W_h] + z (x) x
    e'[b_z] = (1 - z) e[b_z] + d                      e'[W_z] = (1 - z) e[W_z] + d (x) x
    d = (h~ - h) z (1 - z)                            (dh'/d(x @ W_z + b_z), with h the previous carry)

and a credit ``g`` on the new carry gives ``dL/dtheta = g * e[theta]`` (per neuron, broadcast along a projection's
row). Memory: ``2 N (D + 1)`` floats, the size of the parameters.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.elementwise import ElementwiseCell, neuron_major_to_params, outer, per_neuron, trace_zeros


def gate_and_candidate(vectors: Params, u: Params) -> tuple[jax.Array, jax.Array]:
    """``(z, h~)`` from the projections ``u = {W_z: x @ W_z, W_h: x @ W_h}`` and the biases."""
    return jax.nn.sigmoid(u["W_z"] + vectors["b_z"]), u["W_h"] + vectors["b_h"]


class MinGRU(ElementwiseCell):
    """``MinGRU(input_size, hidden_size, max_timescale=0, min_timescale=2)``; see the module docstring."""

    max_timescale: float = 0.0
    min_timescale: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (isinstance(self.max_timescale, (int, float)) and 0 <= self.max_timescale < float("inf")):
            raise ValueError(f"max_timescale must be a finite number >= 0 (0: no chrono initialisation), got "
                             f"{self.max_timescale!r}")
        if not (isinstance(self.min_timescale, (int, float)) and 1 < self.min_timescale < float("inf")):
            raise ValueError(f"min_timescale must be a finite number > 1 (a neuron's shortest timescale at the "
                             f"start), got {self.min_timescale!r}")

    def unread_options(self) -> dict[str, str]:
        if self.max_timescale > self.min_timescale:
            return {}
        why = (f"the chrono initialisation needs max_timescale above min_timescale={self.min_timescale!r}, got "
               f"max_timescale={self.max_timescale!r}")
        return {"min_timescale": why, "max_timescale": why}

    def init_param(self, name, shape, key, dtype):
        if name == "b_z" and self.max_timescale > self.min_timescale:
            tau = jax.random.uniform(key, shape, dtype, self.min_timescale, self.max_timescale)
            return -jnp.log(tau - 1)
        return super().init_param(name, shape, key, dtype)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.hidden_size
        return {"W_z": (D, N), "b_z": (N,), "W_h": (D, N), "b_h": (N,)}

    def carry_sizes(self) -> dict[str, int]:
        return {"h": self.hidden_size}

    def projections(self) -> tuple[str, ...]:
        return ("W_z", "W_h")

    def recur(self, vectors: Params, carry: Params, u: Params) -> Params:
        z, candidate = gate_and_candidate(vectors, u)
        return {"h": (1 - z) * carry["h"] + z * candidate}

    def output(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        return carry["h"]

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_init(self, params: Params, carry: Params) -> Params:
        return {name: trace_zeros(p, carry["h"].dtype) for name, p in params.items()}

    def trace_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        vectors, projections = self.split_params(params)
        z, candidate = gate_and_candidate(vectors, self.project(projections, x))
        d = (candidate - carry["h"]) * z * (1 - z)
        drives = {"b_h": z, "W_h": outer(z, x), "b_z": d, "W_z": outer(d, x)}
        return {name: per_neuron(1 - z, e) * e + drives[name] for name, e in traces.items()}

    def trace_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return {name: per_neuron(g_carry["h"], e) * e for name, e in traces.items()}

    def trace_to_params(self, params: Params, grads: Params) -> Params:
        return neuron_major_to_params(grads, self.projections())
