"""Recurrent trace units (RTU; Elelimy et al. 2024): the LRU's dynamics in real 2x2 rotation form, linear or not.

Forward, one example: input row ``x`` (D,), carry ``{c1, c2}`` (each (N,), the real and imaginary parts of the
LRU's complex state), ``lambda = g + i p`` as in ``rtrl.cells.lru`` (``|lambda| = r <= RHO < 1`` for every
parameter value), and the input normalisation fixed by ``r`` (not learned)::

    g = r cos(phase),  p = r sin(phase),  gamma = sqrt(1 - r^2)            r, phase from nu, theta (N,)
    a1 = g * c1 - p * c2 + gamma * (x @ W1)                                W1, W2 (D, N)
    a2 = p * c1 + g * c2 + gamma * (x @ W2)
    linear     (default):  c1' = a1,       c2' = a2,       h = f(c1') @ C1 + f(c2') @ C2
    non-linear:            c1' = f(a1),    c2' = f(a2),    h = c1' @ C1 + c2' @ C2      C1, C2 (N, N)

``f`` is the ``activation`` option (tanh by default). The paper's output is the concatenation ``(f(c1), f(c2))``
of width 2N. Under ``output_map="matrix"`` (the default, the equations above) the cell's output has width
``hidden_size = N``, so the RTU ends in the linear map ``C1, C2`` that any layer reading the concatenation would
apply first. Under ``output_map="concat"`` it is the paper's: ``hidden_size`` must be even, the cell has
``N = hidden_size / 2`` units (carry leaves and ``nu, theta`` of size N, ``W1, W2`` (D, N)), no ``C1, C2``, and::

    linear:      h = (f(c1'), f(c2'))          non-linear:  h = (c1', c2')          width hidden_size = 2 N

A linear layer on ``h`` (a readout, an agent's heads) then applies ``C1, C2`` itself (``[C1; C2] W`` is one linear
map), so nothing is lost, and a method that keeps a trace per parameter (an agent's parameter-space eligibility
traces) no longer carries two N x N matrices per stream.

Closed-form traces (derivation: docs/derivations.md). The linear RTU is the LRU's recurrence with
``gamma = sqrt(1 - r^2)``, so it keeps the LRU's three complex traces ``Q = ds/dlambda``, ``S = ds/dgamma`` and
``E = ds/dW1`` (``ds/dW2 = i E``; ``s = c1 + i c2``), and ``dL/dnu`` gains ``Re(conj(g) S) dgamma/dnu`` with
``dgamma/dnu = exp(nu) r^2 / gamma``. The non-linear RTU's activation acts on the real and imaginary parts
separately, so each parameter ``theta`` keeps its own complex trace ``T[theta] = ds/dtheta``::

    T'[theta] = f'(a1) Re(z) + i f'(a2) Im(z),   z = lambda T[theta] + (immediate part of da/dtheta)
    immediate:  nu: dlambda/dnu s + dgamma/dnu u,   theta: dlambda/dtheta s,   W1: gamma x,   W2: i gamma x

(``u = x @ W1 + i x @ W2``, outer products over (D, N) for W1, W2), and a credit ``g`` gives
``dL/dtheta = Re(conj(g) T[theta])``. Memory: ``2 (2N + D N)`` floats (linear), ``2 (2N + 2 D N)`` (non-linear),
N the units (``hidden_size / 2`` under ``"concat"``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.cells.base import Params, activation
from rtrl.cells.elementwise import ElementwiseCell, computed_once
from rtrl.cells.lru import (
    RHO,
    check_output_map,
    check_ring,
    concat_units,
    credit,
    eigenvalue,
    eigenvalue_derivatives,
    linear_trace_contract,
    linear_trace_init,
    linear_trace_update,
    ring_init,
    rotate,
    to_complex,
)

VARIANTS = ("linear", "nonlinear")


def normalisation(nu: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(gamma, dgamma/dnu)`` with ``gamma = sqrt(1 - r^2)``, ``r = RHO exp(-exp(nu))``."""
    r = RHO * jnp.exp(-jnp.exp(nu))
    gamma = jnp.sqrt(1 - r**2)
    return computed_once(gamma, jnp.exp(nu) * r**2 / gamma)


class RTU(ElementwiseCell):
    """``RTU(input_size, hidden_size, variant="linear", activation="tanh", r_min=0.4, r_max=0.99,
    max_phase=2 pi, output_map="matrix")``; see the module docstring."""

    variant: str = "linear"
    activation: str = "tanh"
    r_min: float = 0.4
    r_max: float = 0.99
    max_phase: float = 2 * math.pi
    output_map: str = "matrix"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {list(VARIANTS)}, got {self.variant!r}")
        activation(self.activation)  # validates the name
        check_ring(self.r_min, self.r_max, self.max_phase)
        check_output_map(self.output_map, self.hidden_size)

    def units(self) -> int:
        return concat_units(self.output_map, self.hidden_size)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.units()
        matrices = {"C1": (N, N), "C2": (N, N)} if self.output_map == "matrix" else {}
        return {"nu": (N,), "theta": (N,), "W1": (D, N), "W2": (D, N), **matrices}

    def carry_sizes(self) -> dict[str, int]:
        return {"c1": self.units(), "c2": self.units()}

    def projections(self) -> tuple[str, ...]:
        return ("W1", "W2")

    def readout(self) -> tuple[str, ...]:
        return ("C1", "C2") if self.output_map == "matrix" else ()

    def init(self, key: jax.Array, dtype=None) -> Params:
        params = super().init(key, dtype)
        return {**params, **ring_init(jax.random.fold_in(key, 1), (self.units(),), params["nu"].dtype,
                                      self.r_min, self.r_max, self.max_phase)}

    def pre_activation(self, vectors: Params, carry: Params, u1, u2) -> tuple[jax.Array, jax.Array]:
        gamma, _ = normalisation(vectors["nu"])
        a1, a2 = rotate(eigenvalue(vectors["nu"], vectors["theta"]), carry["c1"], carry["c2"])
        return a1 + gamma * u1, a2 + gamma * u2

    def recur(self, vectors: Params, carry: Params, u: Params) -> Params:
        a1, a2 = self.pre_activation(vectors, carry, u["W1"], u["W2"])
        if self.variant == "nonlinear":
            f = activation(self.activation).fn
            a1, a2 = f(a1), f(a2)
        return {"c1": a1, "c2": a2}

    def output(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        c1, c2 = carry["c1"], carry["c2"]
        if self.variant == "linear":
            f = activation(self.activation).fn
            c1, c2 = f(c1), f(c2)
        if self.output_map == "concat":
            return jnp.concatenate([c1, c2], axis=-1)
        return c1 @ params["C1"] + c2 @ params["C2"]

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["c1"].dtype
        if self.variant == "linear":
            return linear_trace_init(self.input_size, self.units(), dtype)
        return {name: {"re": jnp.zeros(jnp.shape(params[name]), dtype), "im": jnp.zeros(jnp.shape(params[name]), dtype)}
                for name in ("nu", "theta", "W1", "W2")}

    def trace_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        lam = lax.complex(*eigenvalue(params["nu"], params["theta"]))
        gamma, d_gamma = normalisation(params["nu"])
        s = lax.complex(carry["c1"], carry["c2"])
        u = lax.complex(x @ params["W1"], x @ params["W2"])
        if self.variant == "linear":
            return linear_trace_update(traces, lam, gamma, s, u, x)
        d_nu, d_theta = eigenvalue_derivatives(params["nu"], params["theta"], lam)
        immediate = {"nu": d_nu * s + d_gamma * u, "theta": d_theta * s,
                     "W1": x[:, None] * gamma, "W2": 1j * x[:, None] * gamma}
        df = activation(self.activation).derivative
        a = lam * s + gamma * u
        d1, d2 = df(jnp.real(a)), df(jnp.imag(a))
        new = {}
        for name, drive in immediate.items():
            z = lam * to_complex(traces[name]) + drive
            new[name] = {"re": d1 * jnp.real(z), "im": d2 * jnp.imag(z)}
        return new

    def trace_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        zeros = {name: jnp.zeros_like(params[name]) for name in self.readout()}
        if self.variant == "linear":
            g = credit(g_carry["c1"], g_carry["c2"], traces["Q"]["re"])
            a, b, w = linear_trace_contract(traces, g)
            lam = lax.complex(*eigenvalue(params["nu"], params["theta"]))
            d_nu, d_theta = eigenvalue_derivatives(params["nu"], params["theta"], lam)
            d_gamma = normalisation(params["nu"])[1]
            return {**zeros, "nu": jnp.real(a * d_nu) + d_gamma * jnp.real(b), "theta": jnp.real(a * d_theta),
                    "W1": jnp.real(w), "W2": -jnp.imag(w)}
        g = jnp.conj(credit(g_carry["c1"], g_carry["c2"], traces["nu"]["re"]))
        return {**zeros, **{name: jnp.real(g * to_complex(t)) for name, t in traces.items()}}
