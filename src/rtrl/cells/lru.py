"""Linear recurrent unit (LRU; Orvieto et al. 2023): a complex diagonal recurrence, with closed-form traces.

Forward, one example: input row ``x`` (D,), carry ``s = re + i im`` (N complex numbers, carried as two real
leaves ``{re, im}``)::

    lambda = RHO exp(-exp(nu) + i phase),   phase = exp(min(theta, THETA_MAX))     nu, theta (N,)
    gamma  = exp(gamma_log)                                                       gamma_log (N,)
    s'     = lambda * s + gamma * (x @ B_re + i x @ B_im)                         B_re, B_im (D, N)
    h      = re' @ C_re - im' @ C_im + x @ skip  ( = Re(s' C) + x @ skip )        C_re, C_im (N, N), skip (D, N)

Under ``output_map="concat"`` (the default is ``"matrix"``, the equations above) there is no ``C``: ``hidden_size``
must be even, the cell has ``N = hidden_size / 2`` complex units (carry leaves, ``nu``, ``theta``, ``gamma_log`` of
size N, ``B_re, B_im`` (D, N)), and ``h`` is their real and imaginary parts side by side, width ``hidden_size``::

    h      = (re', im') + x @ skip                                                skip (D, hidden_size)

A linear layer on ``h`` (a readout, an agent's heads) then does what ``C`` did: ``Re(s' C) W`` is
``(re', im') [C_re W; -C_im W]``, one linear map, so folding ``C`` into that layer loses nothing, and a method that
keeps a trace per parameter (an agent's parameter-space eligibility traces) no longer carries two N x N matrices
per stream. ``skip`` stays, now ``(D, hidden_size)``: with a linear layer after it the concatenated cell is the
matrix one's function class exactly (``x skip W`` is the matrix cell's direct path from ``x``; ``s'`` alone reaches
``x`` only through ``gamma x B``, which the recurrence shares), at ``D hidden_size`` parameters, not ``N^2``.

``RHO = 1 - 1e-6`` keeps ``|lambda| <= RHO < 1`` for every finite parameter value even where ``exp(-exp(nu))``
rounds to 1 (nu below about -37 in float64, -17 in float32); ``THETA_MAX`` keeps the phase finite (any phase
above ``2 pi`` is already redundant). The paper's skip term is diagonal (``D * x``, input and output of one
width); here it is a matrix so that any ``input_size`` and ``hidden_size`` work.

Ring initialisation (the constructor's options): ``|lambda|`` uniform on the ring ``r_min <= r <= r_max`` (by
area: ``r^2`` uniform), the phase uniform in ``(0, max_phase]``, ``gamma = sqrt(1 - |lambda|^2)`` so that a
white-noise input gives a state of unit variance, ``B`` normal with variance ``1/(2D)`` per part, ``C`` normal with
variance ``1/N`` per part.

Why two real leaves and not a complex carry: every method of the library works on real pytrees. Dense ``rtrl``
flattens the carry with ``ravel_pytree`` and builds real Jacobians (``jacfwd`` of a complex carry would need a
holomorphic convention), ``diagonal`` reads per-neuron ``(N,)`` real leaves and differentiates ``recur`` with
all-ones real tangents, resets zero real leaves, and ``initial_carry``/``random_problem``/the float32 and float64
tests make real arrays of the requested dtype. Inside the closed form, complex arithmetic is the clearest notation,
so the traces are computed as complex numbers and stored as ``{re, im}`` pairs as well.

Closed-form traces (derivation: docs/derivations.md). For fixed parameters ``s_t`` is holomorphic in ``lambda`` and
linear in ``gamma`` and ``B``, and ``d s / d B_im = i d s / d B_re`` (the same recurrence driven by ``i x``), so
three complex traces hold every sensitivity::

    Q' = lambda * Q + s           Q = ds/dlambda                                  (N,)
    S' = lambda * S + u           S = ds/dgamma,  u = x @ B_re + i x @ B_im       (N,)
    E' = lambda * E + gamma x     E[i, k] = ds_k/dB_re[i, k]  (outer: x_i gamma_k) (D, N)

and a credit ``g = g_re + i g_im`` on the carry they describe gives (``a = conj(g) Q``, ``b = conj(g) S``,
``w = conj(g) E``)::

    dL/dnu = Re(a dlambda/dnu),  dlambda/dnu = -exp(nu) lambda
    dL/dtheta = Re(a dlambda/dtheta),  dlambda/dtheta = i phase lambda  (0 where theta >= THETA_MAX)
    dL/dgamma_log = gamma Re(b),   dL/dB_re = Re(w),   dL/dB_im = -Im(w)

Memory: ``2 (2N + D N)`` floats (N the complex units: ``hidden_size / 2`` under ``"concat"``), as the
``diagonal`` method finds from the step alone (docs/derivations.md).
The helpers below are shared with ``RTU`` (``rtrl.cells.rtu``), whose linear variant has the same recurrence.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.cells.base import Params
from rtrl.cells.elementwise import ElementwiseCell, computed_once

RHO = 1 - 1e-6
THETA_MAX = 20.0
OUTPUT_MAPS = ("matrix", "concat")


# -- complex numbers carried as {re, im} pairs ----------------------------------------------------------------
def to_complex(pair: Params) -> jax.Array:
    return lax.complex(pair["re"], pair["im"])


def to_pair(z: jax.Array) -> Params:
    return {"re": jnp.real(z), "im": jnp.imag(z)}


def credit(g_re, g_im, like: jax.Array) -> jax.Array:
    """``g_re + i g_im``, a ``None`` part (no credit on that leaf) read as zeros."""
    zero = jnp.zeros_like(like)
    return lax.complex(zero if g_re is None else g_re, zero if g_im is None else g_im)


# -- the eigenvalues ------------------------------------------------------------------------------------------
def check_ring(r_min, r_max, max_phase) -> None:
    """``ValueError`` unless ``0 <= r_min <= r_max < RHO`` (with ``r_max > 0``) and ``max_phase > 0``."""
    for name, value in (("r_min", r_min), ("r_max", r_max), ("max_phase", max_phase)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not 0 <= r_min <= r_max:
        raise ValueError(f"r_min must satisfy 0 <= r_min <= r_max = {r_max}, got r_min = {r_min}")
    if not 0 < r_max < RHO:
        raise ValueError(f"r_max must be in (0, {RHO}) (|lambda| < 1: a stable recurrence), got {r_max}")
    if not max_phase > 0:
        raise ValueError(f"max_phase must be > 0, got {max_phase}")


def check_output_map(output_map, hidden_size: int) -> None:
    """``ValueError`` unless ``output_map`` is one of ``OUTPUT_MAPS``, and ``hidden_size`` even under ``"concat"``."""
    if not isinstance(output_map, str) or output_map not in OUTPUT_MAPS:
        raise ValueError(f"output_map must be one of {list(OUTPUT_MAPS)}, got {output_map!r}")
    if output_map == "concat" and hidden_size % 2:
        raise ValueError(f"hidden_size must be even under output_map='concat' (hidden_size / 2 complex units, h their "
                         f"real and imaginary parts side by side), got {hidden_size}")


def concat_units(output_map: str, hidden_size: int) -> int:
    """The number of complex units: ``hidden_size``, or ``hidden_size / 2`` under ``output_map="concat"``."""
    return hidden_size // 2 if output_map == "concat" else hidden_size


def ring_init(key: jax.Array, shape, dtype, r_min: float, r_max: float, max_phase: float) -> Params:
    """``{nu, theta}`` with ``|lambda|`` uniform on the ring by area and the phase uniform in ``(0, max_phase]``."""
    k_r, k_p = jax.random.split(key)
    u_r = 1 - jax.random.uniform(k_r, shape, dtype)  # in (0, 1]: r > 0 and the phase > 0, so both logs are finite
    u_p = 1 - jax.random.uniform(k_p, shape, dtype)
    r = jnp.maximum(jnp.sqrt(r_min**2 + u_r * (r_max**2 - r_min**2)), jnp.finfo(dtype).tiny)  # r^2 may underflow
    return {"nu": jnp.log(-jnp.log(r / RHO)), "theta": jnp.log(max_phase * u_p)}


def phase(theta: jax.Array) -> jax.Array:
    # Not jnp.minimum: at theta = THETA_MAX its derivative is 1/2 (ties split), where the closed form's is 0.
    return jnp.exp(jnp.where(theta < THETA_MAX, theta, THETA_MAX))


def eigenvalue(nu: jax.Array, theta: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(Re lambda, Im lambda)``, each ``(N,)``."""
    r, p = RHO * jnp.exp(-jnp.exp(nu)), phase(theta)
    return computed_once(r * jnp.cos(p), r * jnp.sin(p))


def eigenvalue_derivatives(nu: jax.Array, theta: jax.Array, lam: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(dlambda/dnu, dlambda/dtheta)`` (complex, ``(N,)``) at ``lambda``."""
    dphase = jnp.where(theta < THETA_MAX, phase(theta), 0)
    return -jnp.exp(nu) * lam, 1j * dphase * lam


def rotate(lam: tuple[jax.Array, jax.Array], re: jax.Array, im: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``lambda * (re + i im)`` in real arithmetic (a 2x2 rotation and scaling per neuron)."""
    lr, li = lam
    return lr * re - li * im, li * re + lr * im


# -- closed-form traces of s' = lambda s + gamma u, one example -----------------------------------------------
def linear_trace_init(input_size: int, hidden_size: int, dtype) -> Params:
    vec, mat = jnp.zeros((hidden_size,), dtype), jnp.zeros((input_size, hidden_size), dtype)
    return {"Q": {"re": vec, "im": vec}, "S": {"re": vec, "im": vec}, "E": {"re": mat, "im": mat}}


def linear_trace_update(traces: Params, lam: jax.Array, gamma: jax.Array, s: jax.Array, u: jax.Array,
                        x: jax.Array) -> Params:
    """``Q, S, E`` of ``s' = lam s + gamma u`` from those of ``s`` (complex ``lam, s, u``, real ``gamma``)."""
    Q, S, E = (to_complex(traces[k]) for k in ("Q", "S", "E"))
    return {"Q": to_pair(lam * Q + s), "S": to_pair(lam * S + u), "E": to_pair(lam * E + x[:, None] * gamma)}


def linear_trace_contract(traces: Params, g: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(conj(g) Q, conj(g) S, conj(g) E)``: the credit ``g`` (complex (N,)) against each trace."""
    g = jnp.conj(g)
    return tuple(g * to_complex(traces[k]) for k in ("Q", "S", "E"))


class LRU(ElementwiseCell):
    """``LRU(input_size, hidden_size, r_min=0.4, r_max=0.99, max_phase=2 pi, output_map="matrix")``; see the module
    docstring."""

    r_min: float = 0.4
    r_max: float = 0.99
    max_phase: float = 2 * math.pi
    output_map: str = "matrix"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_ring(self.r_min, self.r_max, self.max_phase)
        check_output_map(self.output_map, self.hidden_size)

    def units(self) -> int:
        return concat_units(self.output_map, self.hidden_size)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        D, N = self.input_size, self.units()
        if self.output_map == "concat":
            return {"nu": (N,), "theta": (N,), "gamma_log": (N,), "B_re": (D, N), "B_im": (D, N),
                    "skip": (D, self.hidden_size)}
        return {"nu": (N,), "theta": (N,), "gamma_log": (N,), "B_re": (D, N), "B_im": (D, N),
                "C_re": (N, N), "C_im": (N, N), "skip": (D, N)}

    def carry_sizes(self) -> dict[str, int]:
        return {"re": self.units(), "im": self.units()}

    def projections(self) -> tuple[str, ...]:
        return ("B_re", "B_im")

    def readout(self) -> tuple[str, ...]:
        return ("skip",) if self.output_map == "concat" else ("C_re", "C_im", "skip")

    def init(self, key: jax.Array, dtype=None) -> Params:
        params = super().init(key, dtype)
        ring = ring_init(jax.random.fold_in(key, 1), (self.units(),), params["nu"].dtype, self.r_min,
                         self.r_max, self.max_phase)
        r = RHO * jnp.exp(-jnp.exp(ring["nu"]))
        return {**params, **ring, "gamma_log": 0.5 * jnp.log1p(-r**2)}

    def init_param(self, name, shape, key, dtype):
        if name in ("B_re", "B_im"):
            return jax.random.normal(key, shape, dtype) / math.sqrt(2 * self.input_size)
        if name in ("C_re", "C_im"):
            return jax.random.normal(key, shape, dtype) / math.sqrt(self.hidden_size)
        return super().init_param(name, shape, key, dtype)

    def eigenvalues(self, params: Params) -> jax.Array:
        """``lambda`` (complex, ``(N,)``)."""
        return lax.complex(*eigenvalue(params["nu"], params["theta"]))

    def recur(self, vectors: Params, carry: Params, u: Params) -> Params:
        gamma = jnp.exp(vectors["gamma_log"])
        re, im = rotate(eigenvalue(vectors["nu"], vectors["theta"]), carry["re"], carry["im"])
        return {"re": re + gamma * u["B_re"], "im": im + gamma * u["B_im"]}

    def output(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        if self.output_map == "concat":
            return jnp.concatenate([carry["re"], carry["im"]], axis=-1) + x @ params["skip"]
        return carry["re"] @ params["C_re"] - carry["im"] @ params["C_im"] + x @ params["skip"]

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def trace_init(self, params: Params, carry: Params) -> Params:
        return linear_trace_init(self.input_size, self.units(), carry["re"].dtype)

    def trace_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        u = lax.complex(x @ params["B_re"], x @ params["B_im"])
        return linear_trace_update(traces, self.eigenvalues(params), jnp.exp(params["gamma_log"]),
                                   to_complex(carry), u, x)

    def trace_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        a, b, w = linear_trace_contract(traces, credit(g_carry["re"], g_carry["im"], traces["Q"]["re"]))
        d_nu, d_theta = eigenvalue_derivatives(params["nu"], params["theta"], self.eigenvalues(params))
        grads = {name: jnp.zeros_like(params[name]) for name in self.readout()}
        return {**grads, "nu": jnp.real(a * d_nu), "theta": jnp.real(a * d_theta),
                "gamma_log": jnp.exp(params["gamma_log"]) * jnp.real(b), "B_re": jnp.real(w), "B_im": -jnp.imag(w)}
