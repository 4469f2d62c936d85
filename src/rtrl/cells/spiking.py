"""What the spiking cells share: the spike function with its surrogate derivative, the options, the input current.

A spike is a Heaviside step of the membrane's distance above its threshold, ``s = H(u)``, ``u = v - threshold``.
Its derivative is zero almost everywhere, so the backward pass (and every trace) uses a **surrogate**
``psi(u)`` in its place (``spike`` is a ``jax.custom_jvp``: Heaviside forward, ``psi(u) du`` as its tangent), with
``k = surrogate_scale`` the steepness and ``c = surrogate_height`` the peak::

    "fast_sigmoid" (default; SuperSpike, Zenke & Ganguli 2018):  psi(u) = c / (1 + k |u|)^2
    "triangle"     (Bellec et al. 2020):                          psi(u) = c max(0, 1 - k |u|)

Bellec et al.'s pseudo-derivative ``gamma / v_th max(0, 1 - |u| / v_th)`` is the triangle with ``k = 1 / v_th``,
``c = gamma / v_th`` (``gamma = 0.3``). BPTT through ``step`` and the hand-derived traces use the same ``psi``, so
exact methods equal BPTT *through the surrogate*.

Every spiking cell's output is its spikes, ``h = s`` (in {0, 1}), and its carry keeps its last spikes ``s`` beside
the membrane ``v``: the reset by subtraction and the recurrent current both read them. The input current is, in
the row-vector convention::

    I = x @ W + b  (+ s_prev @ R  with recurrent=True)          W (D, N), b (N,), R (N, N)

Without ``R`` every neuron evolves on its own (element-wise), so the cells provide closed-form traces of the size
of their parameters; with ``R`` they are dense, and the closed-form hooks are absent. The option decides the
capability, so the class defines none of them: the cell itself gets ``trace_init / trace_update / trace_contract``
(its ``closed_form_*`` functions) at construction when ``recurrent=False``. ``isinstance(cell,
HandDerivedTraces)`` is then false with ``R``, ``closed_form`` refuses the cell and ``auto`` finds the dense
structure from the step and picks ``rtrl``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from rtrl.cells.base import Cell, Params

SURROGATES: dict[str, Callable[[jax.Array], jax.Array]] = {
    "fast_sigmoid": lambda s: 1.0 / (1.0 + jnp.abs(s)) ** 2,
    "triangle": lambda s: jnp.maximum(0.0, 1.0 - jnp.abs(s)),
}


def surrogate_derivative(u: jax.Array, kind: str, scale: float, height: float) -> jax.Array:
    """``psi(u)``, the surrogate of ``dH(u)/du`` (see the module docstring)."""
    return height * SURROGATES[kind](scale * u)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3))
def spike(u: jax.Array, kind: str, scale: float, height: float) -> jax.Array:
    """``H(u)``: 1 where ``u > 0``, else 0, in ``u``'s dtype; its derivative is ``psi(u)``."""
    return (u > 0).astype(u.dtype)


@spike.defjvp
def _spike_jvp(kind, scale, height, primals, tangents):
    (u,), (du,) = primals, tangents
    return spike(u, kind, scale, height), surrogate_derivative(u, kind, scale, height) * du


def check_number(name: str, value, low: float = -math.inf, high: float = math.inf, *, open_low: bool = True,
                 open_high: bool = True) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a finite real number in the given interval."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    above = value > low if open_low else value >= low
    below = value < high if open_high else value <= high
    if not (above and below):
        interval = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")


class SpikingCell(Cell):
    """Base class of ``LIF``, ``ALIF`` and ``SpikingIIR2``: the options below, the current, the spikes as output.

    ``leak`` in (0, 1): the membrane's decay per step (``tau = dt / (1 - leak)``); ``threshold`` > 0;
    ``surrogate``: ``"fast_sigmoid"`` or ``"triangle"``; ``surrogate_scale``, ``surrogate_height`` > 0;
    ``recurrent``: whether the last spikes feed back through ``R``."""

    leak: float = 0.9
    threshold: float = 1.0
    surrogate: str = "fast_sigmoid"
    surrogate_scale: float = 5.0
    surrogate_height: float = 1.0
    recurrent: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number("leak", self.leak, 0.0, 1.0)
        check_number("threshold", self.threshold, 0.0)
        check_number("surrogate_scale", self.surrogate_scale, 0.0)
        check_number("surrogate_height", self.surrogate_height, 0.0)
        if self.surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {sorted(SURROGATES)}, got {self.surrogate!r}")
        if not isinstance(self.recurrent, bool):
            raise ValueError(f"recurrent must be True or False, got {self.recurrent!r}")
        if not self.recurrent:  # element-wise: the cell has closed-form traces (rtrl.capabilities.HandDerivedTraces)
            for name in ("init", "update", "contract"):
                object.__setattr__(self, "trace_" + name, getattr(self, "closed_form_" + name))

    # -- shared pieces of the step ----------------------------------------------------------------------
    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """``W``, ``b`` and, with ``recurrent``, ``R``."""
        D, N = self.input_size, self.hidden_size
        return {"W": (D, N), "b": (N,), **({"R": (N, N)} if self.recurrent else {})}

    def current(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        """``I = x @ W + b (+ s_prev @ R)``."""
        current = x @ params["W"] + params["b"]
        return current + carry["s"] @ params["R"] if self.recurrent else current

    def fire(self, u: jax.Array) -> jax.Array:
        """The spikes ``H(u)`` with this cell's surrogate derivative."""
        return spike(u, self.surrogate, self.surrogate_scale, self.surrogate_height)

    def psi(self, u: jax.Array) -> jax.Array:
        """The surrogate derivative ``psi(u)`` (what the traces use in place of ``dH/du``)."""
        return surrogate_derivative(u, self.surrogate, self.surrogate_scale, self.surrogate_height)

    def output(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        """``h``: the new spikes."""
        return carry["s"]

    def step(self, params: Params, carry: Params, x: jax.Array) -> tuple[Params, jax.Array]:
        self.check_input(x)
        self.check_params(params, self.param_shapes())
        self.check_carry(carry, self.carry_sizes())
        carry = self.advance(params, carry, x)
        return carry, self.output(params, carry, x)

    def advance(self, params: Params, carry: Params, x: jax.Array) -> Params:
        """The next carry (each cell's equations)."""
        raise NotImplementedError

    def presynaptic(self, carry: Params, x: jax.Array) -> Params:
        """``dI/dtheta`` of one step, laid out like each parameter: ``x (x) 1``, ``1`` and ``s_prev (x) 1``."""
        return {"W": x[:, None], "b": jnp.ones((self.hidden_size,), x.dtype),
                **({"R": carry["s"][:, None]} if self.recurrent else {})}


def credit(g: jax.Array | None, like: jax.Array) -> jax.Array:
    """A credit leaf, ``None`` (no credit) read as zeros."""
    return jnp.zeros_like(like) if g is None else g
