"""Adaptive second-order IIR filter neurons (seed 001): coefficients computed from the input at every step.

Forward, one example: input row ``x`` (D,), carry ``{z1, z2, y1, y2}`` as in ``IIR2``; each coefficient source
``s`` has its own single-neuron tanh network ``v_s = tanh(x @ w_s + c_s)`` (``w_s`` (D, N), ``c_s`` (N,)),
driven by the same ``x`` that makes ``z``::

    z  = x @ W + b
    a0, a1, b0, b1 = v_a0, v_a1, v_b0, v_b1                         ("seed", default)
                   = v_k1 (1 + v_k2), v_k2, v_b0, v_b1               ("stable": reflection coefficients)
    y  = z + b0*z1 + b1*z2 - a0*y1 - a1*y2
    carry' = {z1: z, z2: z1, y1: y, y2: y1}                          h = act(y)   (act: tanh by default)

The seed parameterisation names its parameters ``w_a0, c_a0, w_a1, c_a1, w_b0, c_b0, w_b1, c_b1``; the stable
one ``w_k1, c_k1, w_k2, c_k2, w_b0, ...``. Its ``a0, a1`` lie inside the stability triangle at every step, for
any parameters and inputs; a sequence of stable steps can still diverge (docs/stability.md).

Closed-form traces: those of ``IIR2`` (``rtrl.cells.iir2``) with the coefficients of the current step, whose
driving terms for the coefficient networks are, with ``dy/dv_s`` as in ``IIR2`` and ``d_s = dy/dv_s (1 - v_s^2)``::

    D[w_s] = x (x) d_s          D[c_s] = d_s

(the seed's ``D^{w_a0} = -y[t] (1 - a0[t+1]^2) x[t]``, in this module's notation). Memory: twice the
parameters plus two inputs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.elementwise import outer
from rtrl.cells.iir2 import (
    SOURCES,
    SecondOrderFilter,
    direct_form,
    filter_step,
    filter_trace_update,
    source_sensitivity,
)


class AdaptiveIIR2(SecondOrderFilter):
    """Second-order IIR filter whose coefficients are tanh networks of the input; see the module docstring."""

    @property
    def source_names(self) -> tuple[str, ...]:
        return SOURCES[self.parameterisation]

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.hidden_size
        shapes = {"W": (D, N), "b": (N,)}
        for s in self.source_names:
            shapes.update({f"w_{s}": (D, N), f"c_{s}": (N,)})
        return shapes

    def projections(self) -> tuple[str, ...]:
        return ("W",) + tuple(f"w_{s}" for s in self.source_names)

    def init_param(self, name, shape, key, dtype):
        if name.startswith("w_"):  # coefficient networks start small: coefficients near zero, filters stable
            scale = 0.5 / self.input_size**0.5
            return jax.random.uniform(key, shape, dtype, -scale, scale)
        return super().init_param(name, shape, key, dtype)

    def sources(self, vectors: Params, u: Params) -> Params:
        """``v_s = tanh(x @ w_s + c_s)`` for each coefficient source, from the projections ``u``."""
        return {s: jnp.tanh(u[f"w_{s}"] + vectors[f"c_{s}"]) for s in self.source_names}

    def coefficients(self, params: Params, x: jax.Array | None = None) -> tuple[jax.Array, ...]:
        """``(a0, a1, b0, b1)`` of the step whose input is ``x`` (*batch, D), each ``(*batch, N)``."""
        if x is None:
            raise ValueError(f"x is required: the coefficients of {self.name} depend on the input "
                             f"(*batch, input_size={self.input_size})")
        self.check_input(x)
        self.check_params(params, self.param_shapes())
        vectors, projections = self.split_params(params)
        return direct_form(self.parameterisation, self.sources(vectors, self.project(projections, x)))

    def recur(self, vectors: Params, carry: Params, u: Params) -> Params:
        v = self.sources(vectors, u)
        return filter_step(carry, u["W"] + vectors["b"], direct_form(self.parameterisation, v))

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        vectors, projections = self.split_params(params)
        del projections["W"]  # z's projection is not needed here
        v = self.sources(vectors, self.project(projections, x))
        dy_dv = source_sensitivity(self.parameterisation, v, carry)
        drives = {}
        for s in self.source_names:
            d = dy_dv[s] * (1 - v[s] ** 2)
            drives[f"w_{s}"], drives[f"c_{s}"] = outer(d, x), d
        return filter_trace_update(traces, x, direct_form(self.parameterisation, v), drives)
