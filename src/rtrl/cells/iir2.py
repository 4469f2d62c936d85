"""Second-order IIR filter neurons (seed 001): forward equations, closed-form traces and the stability triangle.

Forward, one example: input row ``x`` (D,), carry ``{z1, z2, y1, y2}`` = the previous two ``z`` and ``y``
(zero at start)::

    z  = x @ W + b                                     W (D, N), b (N,)
    y  = z + b0*z1 + b1*z2 - a0*y1 - a1*y2             a0, a1, b0, b1 (N,): the filter's coefficients
    carry' = {z1: z, z2: z1, y1: y, y2: y1}            h = act(y)   (act: tanh by default)

Parameterisations of the coefficients (the constructor's ``parameterisation``):

* ``"seed"`` (default, seed 001 as written): ``a0, a1, b0, b1`` are the parameters;
* ``"stable"``: the feedback coefficients come from reflection coefficients ``k1 = tanh(c_k1)``,
  ``k2 = tanh(c_k2)`` in (-1, 1) (parameters ``c_k1, c_k2``), scaled by ``rho = 1 - 1e-4`` (``r = rho k``),
  ``a1 = r2``, ``a0 = r1 (1 + r2)``; this maps the square (-rho, rho)^2 into the stability triangle
  ``|a1| < 1, |a0| < 1 + a1``, so every filter is stable for any parameter value, even where tanh rounds to
  +-1 in floating point (without ``rho`` a large pre-activation would put the filter on the triangle's edge).
  The poles stay within radius ``sqrt(rho)``, a memory of about 20000 steps. ``b0, b1`` stay parameters.

Closed-form traces (derivation: docs/derivations.md). ``z`` depends on ``W, b`` only, and only through
the input that made it, so its sensitivity is kept as that input (the seed's input-history form); ``y`` has
order two, so each parameter ``theta`` keeps ``E1 = dy1/dtheta`` and ``E2 = dy2/dtheta`` (the shape of
``theta``)::

    dz1_k/dW_ik = x1_i      dz1_k/db_k = n1         (x1: the input that made z1, n1 = 1; both 0 for a given carry)
    E1'[theta] = D[theta] - a0*E1[theta] - a1*E2[theta],      E2' = E1,   x2' = x1, x1' = x,   n2' = n1, n1' = 1
    D[W]  = x (x) 1 + b0 * x1 (x) 1 + b1 * x2 (x) 1     (outer products over (D, N))
    D[b]  = 1 + b0*n1 + b1*n2
    D[v]  = dy/dv * dv/dtheta  for a coefficient source v:  dy/da0 = -y1, dy/da1 = -y2, dy/db0 = z1, dy/db1 = z2,
            dy/dk1 = -rho y1 (1 + r2), dy/dk2 = -rho (y1 r1 + y2), dk/dc_k = 1 - k^2

A credit ``g`` on the carry the traces describe gives ``dL/dtheta = g_y1*E1 + g_y2*E2``, plus
``x1 (x) g_z1 + x2 (x) g_z2`` for ``W`` and ``g_z1*n1 + g_z2*n2`` for ``b``. Memory: twice the parameters plus
two inputs; the traces of the projections are kept neuron-major, ``(N, D)`` (``rtrl.cells.elementwise``). The
helpers below are shared with ``AdaptiveIIR2``, whose coefficients vary with the input.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params, activation
from rtrl.cells.elementwise import ElementwiseCell, neuron_major_to_params, outer, per_neuron, trace_zeros

PARAMETERISATIONS = ("seed", "stable")
# The per-neuron quantities each parameterisation learns, in the order (feedback, feedback, feedforward x 2).
SOURCES = {"seed": ("a0", "a1", "b0", "b1"), "stable": ("k1", "k2", "b0", "b1")}
CARRY = ("z1", "z2", "y1", "y2")
# The stable parameterisation's reflection coefficients stay within (-RHO, RHO), strictly inside in float32 too.
RHO = 1 - 1e-4


def check_parameterisation(name: str) -> None:
    if name not in PARAMETERISATIONS:
        raise ValueError(f"parameterisation must be one of {list(PARAMETERISATIONS)}, got {name!r}")


def direct_form(parameterisation: str, v: Params) -> tuple[jax.Array, ...]:
    """``(a0, a1, b0, b1)`` from the coefficient sources ``v`` (named by ``SOURCES[parameterisation]``)."""
    if parameterisation == "stable":
        r1, r2 = RHO * v["k1"], RHO * v["k2"]
        return r1 * (1 + r2), r2, v["b0"], v["b1"]
    return v["a0"], v["a1"], v["b0"], v["b1"]


def source_sensitivity(parameterisation: str, v: Params, carry: Params) -> Params:
    """``dy/dv`` for each coefficient source, with everything else held (the immediate part of its trace)."""
    z1, z2, y1, y2 = (carry[name] for name in CARRY)
    if parameterisation == "stable":
        r1, r2 = RHO * v["k1"], RHO * v["k2"]
        return {"k1": -RHO * y1 * (1 + r2), "k2": -RHO * (y1 * r1 + y2), "b0": z1, "b1": z2}
    return {"a0": -y1, "a1": -y2, "b0": z1, "b1": z2}


def filter_step(carry: Params, z: jax.Array, coefficients: tuple[jax.Array, ...]) -> Params:
    """The second-order filter: the new carry from the previous one and the new ``z``."""
    a0, a1, b0, b1 = coefficients
    y = z + b0 * carry["z1"] + b1 * carry["z2"] - a0 * carry["y1"] - a1 * carry["y2"]
    return {"z1": z, "z2": carry["z1"], "y1": y, "y2": carry["y1"]}


def filter_trace_init(params: Params, dtype, input_size: int) -> Params:
    zeros = {name: trace_zeros(p, dtype) for name, p in params.items()}
    x0, n0 = jnp.zeros((input_size,), dtype), jnp.zeros((), dtype)
    return {"x1": x0, "x2": x0, "n1": n0, "n2": n0, "y1": zeros, "y2": zeros}


def filter_trace_update(traces: Params, x: jax.Array, coefficients, drives: Params) -> Params:
    """One step of the traces. ``drives`` holds ``D[theta]`` of every parameter but ``W`` and ``b`` (neuron-major)."""
    a0, a1, b0, b1 = coefficients
    drives = dict(drives)
    drives["W"] = outer(jnp.ones_like(b0), x) + outer(b0, traces["x1"]) + outer(b1, traces["x2"])
    drives["b"] = 1 + b0 * traces["n1"] + b1 * traces["n2"]
    E1, E2 = traces["y1"], traces["y2"]
    y1 = {name: drives[name] - per_neuron(a0, e) * e - per_neuron(a1, e) * E2[name] for name, e in E1.items()}
    one = jnp.ones((), traces["n1"].dtype)
    return {"x1": x, "x2": traces["x1"], "n1": one, "n2": traces["n1"], "y1": y1, "y2": E1}


def filter_trace_contract(traces: Params, g: Params) -> Params:
    """``dL/dtheta`` (neuron-major) from the credit ``g`` on the carry; a ``None`` credit (none on that leaf) is
    skipped."""
    terms = {name: [] for name in traces["y1"]}
    for leaf in ("y1", "y2"):
        if g[leaf] is not None:
            for name, e in traces[leaf].items():
                terms[name].append(per_neuron(g[leaf], e) * e)
    for leaf, x, n in (("z1", "x1", "n1"), ("z2", "x2", "n2")):
        if g[leaf] is not None:
            terms["W"].append(outer(g[leaf], traces[x]))
            terms["b"].append(traces[n] * g[leaf])
    return {name: sum(t[1:], t[0]) if t else jnp.zeros_like(traces["y1"][name]) for name, t in terms.items()}


def stability_margin(cell, params: Params, x: jax.Array | None = None) -> jax.Array:
    """Distance of each neuron's feedback coefficients inside the stability triangle, ``(*batch, N)``:
    ``min(1 - |a1|, 1 + a1 - |a0|)``, positive exactly when the filter (frozen at that step) is stable.

    ``cell`` is an ``IIR2`` or ``AdaptiveIIR2`` (anything with ``coefficients(params, x)``); the adaptive cell's
    coefficients depend on the input, so it needs ``x`` (*batch, D), one step's inputs."""
    a0, a1, _, _ = cell.coefficients(params, x)
    return jnp.minimum(1 - jnp.abs(a1), 1 + a1 - jnp.abs(a0))


def stability(cell, params: Params, x: jax.Array | None = None) -> jax.Array:
    """Whether each neuron's filter is inside the stability triangle ``|a1| < 1, |a0| < 1 + a1``
    (booleans ``(*batch, N)``); see ``stability_margin``."""
    return stability_margin(cell, params, x) > 0


class SecondOrderFilter(ElementwiseCell):
    """What ``IIR2`` and ``AdaptiveIIR2`` share: the options, the carry, the output and the trace layout.

    ``parameterisation``: ``"seed"`` (default) or ``"stable"``; ``activation``: tanh (default), sigmoid, relu,
    identity."""

    parameterisation: str = "seed"
    activation: str = "tanh"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_parameterisation(self.parameterisation)
        activation(self.activation)  # validates the name

    def carry_sizes(self) -> dict[str, int]:
        return {name: self.hidden_size for name in CARRY}

    def output(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        return activation(self.activation).fn(carry["y1"])

    def trace_init(self, params: Params, carry: Params) -> Params:
        return filter_trace_init(params, carry["y1"].dtype, self.input_size)

    def trace_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return filter_trace_contract(traces, g_carry)

    def trace_to_params(self, params: Params, grads: Params) -> Params:
        return neuron_major_to_params(grads, self.projections())


class IIR2(SecondOrderFilter):
    """Second-order IIR filter on the pre-activation, fixed learnable coefficients; see the module docstring."""

    def coefficient_params(self) -> tuple[str, ...]:
        """The parameters behind ``SOURCES[parameterisation]``, in the same order."""
        if self.parameterisation == "stable":
            return ("c_k1", "c_k2", "b0", "b1")
        return SOURCES["seed"]

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        N = self.hidden_size
        return {"W": (self.input_size, N), "b": (N,), **{name: (N,) for name in self.coefficient_params()}}

    def projections(self) -> tuple[str, ...]:
        return ("W",)

    def init_param(self, name, shape, key, dtype):
        if name in self.coefficient_params():
            # |a0|, |a1| < 0.4 starts every filter inside the triangle with a margin of 0.2 (seed; stable: always)
            return jax.random.uniform(key, shape, dtype, -0.4, 0.4)
        return super().init_param(name, shape, key, dtype)

    def sources(self, vectors: Params) -> Params:
        """The coefficient sources ``SOURCES[parameterisation]`` from the parameters."""
        v = {s: vectors[p] for s, p in zip(SOURCES[self.parameterisation], self.coefficient_params(), strict=True)}
        if self.parameterisation == "stable":
            v["k1"], v["k2"] = jnp.tanh(v["k1"]), jnp.tanh(v["k2"])
        return v

    def source_derivatives(self, v: Params) -> Params:
        """``dv/dparam`` for each source: ``1 - k^2`` behind a tanh, 1 for a raw parameter."""
        return {s: 1 - v[s] ** 2 if s in ("k1", "k2") else jnp.ones_like(v[s]) for s in v}

    def coefficients(self, params: Params, x: jax.Array | None = None) -> tuple[jax.Array, ...]:
        """``(a0, a1, b0, b1)``, each ``(N,)``, broadcast to the batch of ``x`` when one is given."""
        self.check_params(params, self.param_shapes())
        a = direct_form(self.parameterisation, self.sources(self.split_params(params)[0]))
        if x is None:
            return a
        self.check_input(x)
        return tuple(jnp.broadcast_to(c, jnp.shape(x)[:-1] + c.shape) for c in a)

    def recur(self, vectors: Params, carry: Params, u: Params) -> Params:
        return filter_step(carry, u["W"] + vectors["b"], direct_form(self.parameterisation, self.sources(vectors)))

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        v = self.sources(self.split_params(params)[0])
        dy_dv = source_sensitivity(self.parameterisation, v, carry)
        dv_dp = self.source_derivatives(v)
        drives = {p: dy_dv[s] * dv_dp[s] for s, p in zip(v, self.coefficient_params(), strict=True)}
        return filter_trace_update(traces, x, direct_form(self.parameterisation, v), drives)
