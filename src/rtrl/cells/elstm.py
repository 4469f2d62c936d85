"""Element-wise LSTM ("quasi-LSTM", eLSTM of arXiv 2305.19044), with its closed-form traces.

Forward, one example: input row ``x`` (D,), carry ``{c}`` (N,) (zero at start)::

    f  = sig(x @ F + w_f*c + b_f)              F (D, N), w_f, b_f (N,)
    z  = tanh(x @ Z + w_z*c + b_z)             Z (D, N), w_z, b_z (N,)
    c' = f*c + (1 - f)*z
    h  = sig(x @ O + c' @ W_o + b_o) * c'      O (D, N), W_o (N, N), b_o (N,): the output gate

The recurrence is element-wise; the output gate mixes neurons (``c' @ W_o``) but never feeds back, so
``O, W_o, b_o`` are ``readout()`` parameters: they get their gradient from the immediate derivative alone and
have no traces.

Closed-form traces (derivation: docs/derivations.md), ``e[theta] = dc/dtheta`` of the shape of
``theta`` for ``theta`` in ``F, Z, w_f, w_z, b_f, b_z``. With ``df = (c - z) f (1 - f)`` and
``dz = (1 - f)(1 - z^2)`` (the immediate ``dc'/ds`` of the gates' pre-activations) and the per-neuron
``J = dc'/dc = f + df*w_f + dz*w_z``::

    e'[F]   = J*e[F]   + x (x) df        e'[Z]   = J*e[Z]   + x (x) dz
    e'[w_f] = J*e[w_f] + df*c            e'[w_z] = J*e[w_z] + dz*c
    e'[b_f] = J*e[b_f] + df              e'[b_z] = J*e[b_z] + dz

and a credit ``g`` on ``c`` gives ``dL/dtheta = g*e[theta]`` (broadcast over ``D`` for ``F, Z``). Memory: the
size of the recurrent parameters (state order one); ``e[F], e[Z]`` are kept neuron-major, ``(N, D)``
(``rtrl.cells.elementwise``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.elementwise import ElementwiseCell, neuron_major_to_params, outer, per_neuron, trace_zeros


class ELSTM(ElementwiseCell):
    """Element-wise LSTM with an output gate; see the module docstring. The forget bias starts at 1."""

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.hidden_size
        return {"F": (D, N), "Z": (D, N), "O": (D, N), "W_o": (N, N),
                "w_f": (N,), "w_z": (N,), "b_f": (N,), "b_z": (N,), "b_o": (N,)}

    def projections(self) -> tuple[str, ...]:
        return ("F", "Z")

    def readout(self) -> tuple[str, ...]:
        return ("O", "W_o", "b_o")

    def carry_sizes(self) -> dict[str, int]:
        return {"c": self.hidden_size}

    def init_param(self, name, shape, key, dtype):
        if name in ("w_f", "w_z"):
            return jax.random.uniform(key, shape, dtype, -0.5, 0.5)
        if name == "b_f":  # a forget bias of 1 starts the cells remembering, as is customary for LSTMs
            return jnp.ones(shape, dtype)
        return super().init_param(name, shape, key, dtype)

    def gates(self, vectors: Params, c: jax.Array, u: Params) -> tuple[jax.Array, jax.Array]:
        f = jax.nn.sigmoid(u["F"] + vectors["w_f"] * c + vectors["b_f"])
        z = jnp.tanh(u["Z"] + vectors["w_z"] * c + vectors["b_z"])
        return f, z

    def recur(self, vectors: Params, carry: Params, u: Params) -> Params:
        c = carry["c"]
        f, z = self.gates(vectors, c, u)
        return {"c": f * c + (1 - f) * z}

    def output(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        c = carry["c"]
        return jax.nn.sigmoid(x @ params["O"] + c @ params["W_o"] + params["b_o"]) * c

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_init(self, params: Params, carry: Params) -> Params:
        vectors, projections = self.split_params(params)
        return {name: trace_zeros(p, carry["c"].dtype) for name, p in {**vectors, **projections}.items()}

    def trace_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        vectors, projections = self.split_params(params)
        c = carry["c"]
        f, z = self.gates(vectors, c, self.project(projections, x))
        df = (c - z) * f * (1 - f)
        dz = (1 - f) * (1 - z**2)
        J = f + df * vectors["w_f"] + dz * vectors["w_z"]
        drives = {"F": outer(df, x), "Z": outer(dz, x), "w_f": df * c, "w_z": dz * c, "b_f": df, "b_z": dz}
        return {name: per_neuron(J, e) * e + drives[name] for name, e in traces.items()}

    def trace_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        grads = {name: jnp.zeros_like(params[name]) for name in self.readout()}
        grads.update({name: per_neuron(g_carry["c"], e) * e for name, e in traces.items()})
        return grads

    def trace_to_params(self, params: Params, grads: Params) -> Params:
        return neuron_major_to_params(grads, self.projections())
