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
import itertools
import math
import numbers
from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

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


RESETS = ("subtract", "value", "none")


def check_number(name: str, value, low: float = -math.inf, high: float = math.inf, *, open_low: bool = True,
                 open_high: bool = True) -> float:
    """``value`` as a Python float; ``ValueError`` naming ``name`` unless it is a finite real number (a Python or
    NumPy scalar, not a bool) in the given interval."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    value = float(value)
    above = value > low if open_low else value >= low
    below = value < high if open_high else value <= high
    if not (above and below):
        interval = f"{'(' if open_low else '['}{low}, {high}{')' if open_high else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return value


def set_number(obj, name: str, *interval, **kwargs) -> None:
    """``check_number`` on the option ``name`` of the frozen ``obj``, kept as a Python float."""
    object.__setattr__(obj, name, check_number(name, getattr(obj, name), *interval, **kwargs))


def check_numbers(name: str, value, size: int, *interval, **kwargs) -> float | tuple[float, ...]:
    """A per-neuron option: one number for all ``size`` neurons (``check_number``: a Python float), or one per neuron
    (a sequence or array of shape ``(size,)``, each entry checked the same way: a tuple of Python floats, so the cell
    stays hashable, compared by value and written to JSON as a list). ``ValueError`` naming ``name`` (and the entry)
    otherwise."""
    if isinstance(value, numbers.Real) or isinstance(value, bool | str | bytes) or value is None:
        return check_number(name, value, *interval, **kwargs)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a number or {size} numbers (one per neuron), got {value!r:.80}")
    if array.shape == ():
        return check_number(name, array.item(), *interval, **kwargs)
    if array.shape != (size,):
        raise ValueError(f"{name} must be one number or one per neuron, shape (hidden_size,) = ({size},), got shape "
                         f"{array.shape}")
    items = array.tolist()
    if isinstance(value, list | tuple):  # a bool among the numbers is refused, not read as 0 or 1
        items = [v if isinstance(v, bool) else item for v, item in zip(value, items, strict=True)]
    return tuple(check_number(f"{name}[{i}]", v, *interval, **kwargs) for i, v in enumerate(items))


def set_numbers(obj, name: str, *interval, **kwargs) -> None:
    """``check_numbers`` on the per-neuron option ``name`` of the frozen cell ``obj``."""
    object.__setattr__(obj, name, check_numbers(name, getattr(obj, name), obj.hidden_size, *interval, **kwargs))


def option_values(value, like: jax.Array):
    """A per-neuron option as the equations read it: a Python float as it is (weakly typed, so it keeps ``like``'s
    dtype), per-neuron values as an ``(N,)`` array of ``like``'s dtype."""
    return value if isinstance(value, float) else jnp.asarray(value, like.dtype)


class SpikingCell(Cell):
    """Base class of ``LIF``, ``ALIF`` and ``SpikingIIR2``: the options below, the current, the reset, the spikes as
    output, and the membrane's part of the closed-form traces.

    ``leak`` in (0, 1]: the membrane's decay per step (``tau = dt / (1 - leak)``; 1 is a perfect integrator, NIR's
    ``IF``); ``threshold`` > 0; ``surrogate``: ``"fast_sigmoid"`` or ``"triangle"``; ``surrogate_scale``,
    ``surrogate_height`` > 0; ``recurrent``: whether the last spikes feed back through ``R``; ``reset``:
    ``"subtract"`` (the threshold, one step after the spike), ``"value"`` (to ``v_reset`` in the spike's own step,
    as NIR, snnTorch's ``reset_mechanism="zero"`` and Norse) or ``"none"``; ``v_reset`` (finite; read with
    ``reset="value"`` only); ``refractory`` (an integer >= 0, default 0: none): a neuron that spikes cannot spike
    again for the next ``refractory - 1`` steps (the e-prop code's ``n_ref``: the spike's step counts), kept by a
    counter ``r`` in the carry, ``r' = clip(r + refractory s' - 1, 0, refractory)``, ``s' = H(u) [r == 0]``; the
    counter passes no gradient, so the surrogate is zero while the neuron is refractory (as the e-prop code's).

    Heterogeneous neurons: ``leak``, ``threshold`` and ``v_reset`` (and ALIF's ``adaptation`` and
    ``adaptation_decay``) take one number for all neurons or one per neuron, a sequence of ``hidden_size`` numbers
    (each in the option's range; kept as a tuple, ``--cell-arg leak=[0.9,0.8,...]`` on the command line). Every
    equation and trace holds per neuron with them as vectors. ``learn_tau=True`` makes the membrane's time constants
    a parameter ``log_tau`` (N,), ``leak = exp(-exp(-log_tau))`` (``tau = exp(log_tau)`` steps; a decay in (0, 1)
    for any value), starting at the ``leak`` option (which must then be below 1); its traces are the membrane's with
    the drive ``v dleak/dlog_tau``."""

    leak: float = 0.9
    threshold: float = 1.0
    surrogate: str = "fast_sigmoid"
    surrogate_scale: float = 5.0
    surrogate_height: float = 1.0
    recurrent: bool = False
    reset: str = "subtract"
    v_reset: float = 0.0
    refractory: int = 0
    learn_tau: bool = False

    def unread_options(self) -> dict[str, str]:
        return {} if self.reset == "value" else {"v_reset": f"reset={self.reset!r} sets no value (reset='value' does)"}

    def __post_init__(self) -> None:
        super().__post_init__()
        set_numbers(self, "leak", 0.0, 1.0, open_high=False)
        set_numbers(self, "threshold", 0.0)
        set_number(self, "surrogate_scale", 0.0)
        set_number(self, "surrogate_height", 0.0)
        set_numbers(self, "v_reset")
        if self.surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {sorted(SURROGATES)}, got {self.surrogate!r}")
        if not isinstance(self.recurrent, bool):
            raise ValueError(f"recurrent must be True or False, got {self.recurrent!r}")
        if self.reset not in RESETS:
            raise ValueError(f"reset must be one of {list(RESETS)}, got {self.reset!r}")
        if self.reset == "value":  # issue 52: a reset above the threshold was taken without a word
            above = np.broadcast_to(self.v_reset, (self.hidden_size,)) >= np.broadcast_to(self.threshold,
                                                                                      (self.hidden_size,))
            if np.any(above):
                k = int(np.argmax(above))
                raise ValueError(f"v_reset must be below threshold with reset='value' (a reset that leaves the "
                                 f"membrane at or above its threshold); neuron {k}: v_reset="
                                 f"{self.values_at('v_reset', k)}, threshold={self.values_at('threshold', k)}")
        n = self.refractory
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"refractory must be a non-negative integer, got {n!r}")
        if not isinstance(self.learn_tau, bool):
            raise ValueError(f"learn_tau must be True or False, got {self.learn_tau!r}")
        if self.learn_tau and 1.0 in (self.leak if isinstance(self.leak, tuple) else (self.leak,)):
            raise ValueError(f"learn_tau needs leak < 1 for every neuron (the initial time constant -1/log(leak) in "
                             f"steps must be finite), got leak={self.leak!r}")
        if not self.recurrent:  # element-wise: the cell has closed-form traces (rtrl.capabilities.HandDerivedTraces)
            for name in ("init", "update", "contract"):
                object.__setattr__(self, "trace_" + name, getattr(self, "closed_form_" + name))
        if self.eprop_factorises and hasattr(self, "factored_eprop_init"):  # rtrl.capabilities.FactoredEProp
            for name in ("init", "update", "contract", "output"):
                object.__setattr__(self, "eprop_factored_" + name, getattr(self, "factored_eprop_" + name))
            for name in ("window", "window_traces", "window_carried"):  # rtrl.capabilities.WindowEProp
                object.__setattr__(self, "eprop_" + name, getattr(self, "factored_eprop_" + name))

    # -- shared pieces of the step ----------------------------------------------------------------------
    def values_at(self, name: str, k: int) -> float:
        """Neuron ``k``'s value of the per-neuron option ``name``."""
        value = getattr(self, name)
        return value[k] if isinstance(value, tuple) else value

    def values(self, name: str, like: jax.Array):
        """The per-neuron option ``name`` as the equations read it (``option_values``)."""
        return option_values(getattr(self, name), like)

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        """``W``, ``b``, with ``recurrent`` ``R``, and with ``learn_tau`` the membrane's ``log_tau``."""
        D, N = self.input_size, self.hidden_size
        return {"W": (D, N), "b": (N,), **({"R": (N, N)} if self.recurrent else {}), **self.tau_shapes()}

    # -- learnt time constants (learn_tau=True) ---------------------------------------------------------
    # ``log_tau`` (N,): the membrane's time constant in steps, ``tau = exp(log_tau)``, and
    # ``leak = exp(-1/tau) = exp(-exp(-log_tau))``, in (0, 1) for every value (a stable parameterisation: no step of
    # gradient descent makes a neuron unstable or a perfect integrator). It starts at the ``leak`` option.
    def tau_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"log_tau": (self.hidden_size,)} if self.learn_tau else {}

    def init_param(self, name, shape, key, dtype):
        if name == "log_tau":  # from the leak option: tau = -1/log(leak)
            return jnp.log(-1 / jnp.log(jnp.broadcast_to(jnp.asarray(self.leak, dtype), shape)))
        return super().init_param(name, shape, key, dtype)

    def leak_of(self, params: Params, like: jax.Array):
        """The membrane's decay: the ``leak`` option, or ``exp(-exp(-log_tau))`` with ``learn_tau``."""
        return jnp.exp(-jnp.exp(-params["log_tau"])) if self.learn_tau else self.values("leak", like)

    def leak_drive(self, params: Params, carry: Params) -> Params:
        """``dd/dlog_tau`` with all else held, ``v dleak/dlog_tau = v leak exp(-log_tau)`` (none without
        ``learn_tau``): the drive of ``log_tau``'s membrane trace."""
        if not self.learn_tau:
            return {}
        return {"log_tau": carry["v"] * self.leak_of(params, carry["v"]) * jnp.exp(-params["log_tau"])}

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

    def refractory_carry(self) -> dict[str, int]:
        """The refractory counter's carry entry, ``{"r": N}`` with ``refractory``, else none."""
        return {"r": self.hidden_size} if self.refractory else {}

    def integrate(self, leaky: jax.Array, carry: Params, threshold) -> dict[str, jax.Array]:
        """One step of the membrane from ``leaky = leak v + input``: ``d``, the membrane the spike reads
        (``leaky - threshold s_prev`` with ``reset="subtract"``, else ``leaky``), the spikes ``s = H(u)``,
        ``u = d - threshold`` (``threshold`` may be adapted; with ``refractory``, ``s = H(u) free``, ``free =
        [r_prev == 0]``, and the counter ``r``), and ``v``, the membrane carried on (``d + s (v_reset - d)`` with
        ``reset="value"``, else ``d``)."""
        base = self.values("threshold", leaky)
        d = leaky - base * carry["s"] if self.reset == "subtract" else leaky
        u = d - threshold
        s = self.fire(u)
        v_reset = self.values("v_reset", leaky)
        v_of = (lambda s: d + s * (v_reset - d)) if self.reset == "value" else (lambda s: d)
        if not self.refractory:
            return {"v": v_of(s), "d": d, "u": u, "s": s}
        free = (carry["r"] <= 0).astype(s.dtype)
        s = s * free
        r = jnp.clip(carry["r"] + self.refractory * jax.lax.stop_gradient(s) - 1, 0, self.refractory)
        return {"v": v_of(s), "d": d, "u": u, "s": s, "free": free, "r": r}

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
        """The next carry."""
        new = self.membrane_step(params, carry, x)
        return {name: new[name] for name in self.carry_sizes()}

    def membrane_step(self, params: Params, carry: Params, x: jax.Array) -> dict[str, jax.Array]:
        """The next carry and ``integrate``'s ``d`` and ``u`` beside it (each cell's equations)."""
        raise NotImplementedError

    def presynaptic(self, carry: Params, x: jax.Array) -> Params:
        """``dI/dtheta`` of one step, laid out like each parameter: ``x (x) 1``, ``1`` and ``s_prev (x) 1``."""
        return {name: row[:, None] if jnp.ndim(row) else jnp.full((self.hidden_size,), row)
                for name, row in self.presynaptic_rows(carry, x).items()}

    def presynaptic_rows(self, carry: Params, x: jax.Array) -> Params:
        """What ``presynaptic`` repeats for every postsynaptic neuron: ``x`` (D,), ``1`` (a scalar) and ``s_prev``
        (N,)."""
        return {"W": x, "b": jnp.ones((), x.dtype), **({"R": carry["s"]} if self.recurrent else {})}

    # -- e-prop factorised (Bellec et al. 2020: e_ji = psi_j zbar_i) --------------------------------------------
    # With one leak for all neurons (not learnt) and a reset that never gates the membrane (not "value"), e-prop's
    # membrane eligibility vector ``eps' = leak eps + dI/dtheta`` is the same for every postsynaptic neuron: ``zbar``,
    # the presynaptic rows low-pass filtered by the leak, one per presynaptic entry (``W``: (D,), ``R``: (N,), ``b``:
    # a scalar). The eligibility trace is then ``e_ji = psi_j zbar_i`` and its contraction with a credit ``L_j`` the
    # outer product ``zbar (x) (psi L)``; ALIF keeps its per-synapse adaptation vector for its adapting neurons only.
    @property
    def eprop_factorises(self) -> bool:
        """Whether e-prop's membrane eligibility vectors are shared by all postsynaptic neurons (see above)."""
        return isinstance(self.leak, float) and not self.learn_tau and self.reset != "value"

    def factored_zeros(self, params: Params, carry: Params) -> Params:
        """The factorised traces every spiking cell keeps, zero: ``zbar`` per presynaptic entry, ``psi`` per neuron."""
        dtype = carry["v"].dtype
        return {"z": {name: jnp.zeros(jnp.shape(p)[:-1], dtype) for name, p in params.items()},
                "psi": jnp.zeros((self.hidden_size,), dtype)}

    def filtered_rows(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        """``zbar' = leak zbar + rows``: the presynaptic rows filtered by the membrane's one leak."""
        leak = self.leak_of(params, carry["v"])
        return {name: leak * traces["z"][name] + row for name, row in self.presynaptic_rows(carry, x).items()}

    def eprop_psi(self, params: Params, carry: Params, x: jax.Array) -> jax.Array:
        """The new step's ``psi`` as e-prop's traces read it (``reset_factors``, the refractory gate included)."""
        return self.reset_factors(self.membrane_step(params, carry, x), exact=False)["psi"]

    def outer_rows(self, rows: Params, column: jax.Array) -> Params:
        """``row (x) column`` for every parameter of one example, laid out like it (``b``'s row is a scalar)."""
        return {name: jnp.expand_dims(row, -1) * column for name, row in rows.items()}

    def summed_outer_rows(self, rows: Params, column: jax.Array) -> Params:
        """``outer_rows`` summed over any leading axes of examples that ``rows`` and ``column`` share (a matrix
        product over a batch)."""
        return {name: jnp.einsum("...i,...j->ij" if len(self.param_shapes()[name]) == 2 else "...,...j->j", row, column)
                for name, row in rows.items()}

    # -- e-prop over a window, no trace (rtrl.capabilities.WindowEProp; docs/spiking.md, "e-prop over a window") ----
    # Over a window whose traces start at zero, the factorised contractions ``sum_t g^t . e^t`` need no trace: with
    # ``zbar^t = leak zbar^(t-1) + rows^t`` (zeroed where an episode starts) the filter moves onto the per-neuron
    # credit, backwards in time, ``sum_t zbar^t (x) p^t = sum_t rows^t (x) P^t``, ``P^t = p^t + leak P^(t+1)`` (cut
    # where step t+1 starts an episode), one matrix product over the window's steps and examples for every parameter.
    # ``p^t = g_v^t + g^t - drop^t``, ``g^t = c^t psi^t`` with ``c`` the credit on the spikes (and on the states that
    # filter them, ``filters``) and ``drop`` the adaptation's (ALIF: ``window_adaptation``; none for LIF).
    def factored_eprop_window(self, params: Params, carries: Params, new_carries: Params, xs: jax.Array,
                              g_carries: Params, starts: jax.Array, later=None, filters=()):
        """``(grads, earlier)``: ``sum_t factored_eprop_contract(traces^t, g^t)`` over a window (leading axes
        ``(T, *batch)``: ``carries`` the carry each step starts from, ``new_carries`` the one it makes, ``g_carries``
        the credit on that), the traces zero at the window's start and where ``starts``, and the backward state at
        its first step (``P``, ``lambda``, the filtered credits), which a window just before this one takes as its
        ``later`` (``None``: zero, the last window) and ``window_start`` contracts with the traces
        carried into the window. ``filters``: credits on states that low-pass filter the spikes, ``(g, decay,
        weight)`` for ``o' = decay o + weight s'`` (a readout's: ``Filtered``), whose eligibility traces are the
        spikes' filtered alike: their credit joins the spikes' filtered backwards, ``c^t = g_s^t + sum weight G^t``,
        ``G^t = g^t + decay G^(t+1)``, in the same backward scan."""
        if g_carries.get("a") is not None:
            raise ValueError("e-prop over a window takes credits on the membrane and the spikes only (as "
                             "eprop_factored_contract); a credit on the adaptation needs eprop_contract")
        like = new_carries["v"]
        credits = {"s": credit(g_carries["s"], like), "v": credit(g_carries["v"], like),
                   "filters": tuple(credit(g, like) for g, _, _ in filters)}
        earlier, P = self.window_scan(params, carries, new_carries, credits, starts, later,
                                      tuple((decay, weight) for _, decay, weight in filters))
        return self.window_rows(carries, xs, P), earlier

    def window_scan(self, params: Params, carries: Params, new_carries: Params, credits: Params, starts: jax.Array,
                    later, filters):
        """``(earlier, P)``: ``factored_eprop_window``'s backward scan of the credits ``{"s", "v", "filters"}`` (and
        ``"a"``, a credit on the adaptation's eligibility vector itself, contracted as ``+ eps_a^t g_a^t``:
        ``factored_eprop_window_traces``), each laid out as ``new_carries["v"]``; ``filters``: each filtered credit's
        ``(decay, weight)``."""
        like = new_carries["v"]
        leak = self.leak_of(params, like)
        steps = {"new": {k: new_carries[k] for k in ("v", "a") if k in new_carries},
                 "r": carries["r"] if self.refractory else None, "credits": credits,
                 "keep": 1 - starts.astype(like.dtype)[..., None]}

        def back(later, step):  # P^(t+1), lambda^(t+1), G^(t+1): zero where step t+1 starts an episode
            P, lam, G = later
            g = step["credits"]
            psi = self.window_psi({"r": step["r"]}, step["new"])
            G = tuple(g_f + decay * f for g_f, f, (decay, _) in zip(g["filters"], G, filters, strict=True))
            c = g["s"] + sum(weight * f for f, (_, weight) in zip(G, filters, strict=True))
            lam, drop = self.window_adaptation(lam, c * psi, psi)
            if "a" in g:
                lam = lam - g["a"]
            P = g["v"] + c * psi - drop + leak * P
            keep = step["keep"]
            return jax.tree.map(lambda a: a * keep, (P, lam, G)), P

        if later is None:
            zeros = jnp.zeros_like(like[0])
            later = (zeros, self.window_lambda(zeros), tuple(zeros for _ in filters))
        return jax.lax.scan(back, later, steps, reverse=True)

    # -- a window that starts inside an episode (docs/spiking.md, "The window's boundary term") ---------------------
    # The traces carried into a window, ``zbar0, psi0`` (ALIF: ``eps_a0``; a readout's filtered traces ``F0``),
    # reach its contractions only through the backward state at its first step (``P, lambda, G``), as
    # ``zbar0 (x) (leak P - psi0 lambda) - eps_a0 (x) (rho - psi0 beta) lambda + sum decay G F0``; the traces at the
    # window's end are such sums too, each of a unit credit at the window's last step.
    def window_start(self, params: Params, traces: Params, earlier) -> Params:
        """What the contractions over a window owe to the traces carried into it (``traces``, the factorised layout
        with leading batch axes; ``earlier`` the backward state ``factored_eprop_window`` returned for the window's
        first step), filtered states aside (``Filtered``), summed over the examples."""
        column = self.start_column(params, traces, earlier)
        return self.start_adaptation(self.rows_outer(traces["z"], column, summed=True), traces, earlier[1])

    def start_column(self, params: Params, traces: Params, earlier) -> jax.Array:
        """``leak P - psi0 lambda`` at the window's first step: what ``zbar0`` meets (``eps_a^(t0) = (rho - psi0 beta)
        eps_a0 + psi0 zbar0``)."""
        P, lam, _ = earlier
        column = self.leak_of(params, P) * P
        return column if isinstance(lam, tuple) else column - traces["psi"] * lam

    def start_adaptation(self, grads: Params, traces: Params, lam) -> Params:
        """``window_start``'s part of the carried adaptation vectors (none for a neuron without one)."""
        return grads

    def rows_outer(self, rows: Params, column: jax.Array, summed: bool) -> Params:
        """``row (x) column`` of every example, summed over them (``summed_outer_rows``) or each its own."""
        if summed:
            return self.summed_outer_rows(rows, column)
        return {name: jnp.einsum("...i,...j->...ij" if len(self.param_shapes()[name]) == 2 else "...,...j->...j",
                                 row, column) for name, row in rows.items()}

    def factored_eprop_window_traces(self, params: Params, carries: Params, new_carries: Params, xs: jax.Array,
                                     starts: jax.Array, ends: jax.Array, later=None):
        """``(sums, earlier)`` of ``window_traces`` without a filtered trace (``rtrl.capabilities.WindowEProp``)."""
        return self.window_traces(params, carries, new_carries, xs, starts, ends, later)

    def factored_eprop_window_carried(self, params: Params, traces: Params, earlier, traces_earlier, sums: Params):
        """``(grads, traces)`` of ``window_carried`` without a filtered trace (``rtrl.capabilities.WindowEProp``)."""
        grads, end, _ = self.window_carried(params, traces, earlier, traces_earlier, sums)
        return grads, end

    def window_traces(self, params: Params, carries: Params, new_carries: Params, xs: jax.Array, starts: jax.Array,
                      ends: jax.Array, later=None, filters=()):
        """``(sums, earlier)``: each example's part of the factorised traces after a window that these steps make
        (leading axes ``(T, *batch)`` as ``factored_eprop_window``'s; ``ends`` where the window ends, at its last
        step), and the backward states at their first step, the ``later`` of the steps before them (``None``: zero).
        Each trace is a backward scan of a unit credit where the window ends: the rows filtered by the leak (``z``),
        the adaptation's vectors (``a``, a credit on ``eps_a`` itself) and, ``filters`` the ``(decay, weight)`` of a
        readout's filtered eligibility traces ``F' = decay F + weight e'`` (``Filtered``), theirs (a credit on the
        filtered state); their columns in one matrix product per parameter and example. ``window_carried`` adds what
        the traces carried into the window owe."""
        zeros = jnp.zeros_like(new_carries["v"])
        unit = jnp.broadcast_to(ends.astype(zeros.dtype)[..., None], zeros.shape)
        credits = {"z": {"v": unit}, **({"a": {"a": unit}} if self.adapting_columns() is not None else {}),
                   **{f"filter{k}": {"filters": tuple(unit if i == k else zeros for i in range(len(filters)))}
                      for k in range(len(filters))}}
        base = {"s": zeros, "v": zeros, "filters": tuple(zeros for _ in filters),
                **({"a": zeros} if "a" in credits else {})}
        names = sorted(credits)  # one backward scan for all: the credits stacked on a leading axis

        def stacked(trees):
            return jax.tree.map(lambda *a: jnp.stack(a), *trees)

        def scan(c, later):
            return self.window_scan(params, carries, new_carries, c, starts, later, filters)

        credits = stacked([{**base, **credits[name]} for name in names])
        if later is None:
            scanned = jax.vmap(lambda c: scan(c, None))(credits)
        else:
            scanned = jax.vmap(scan)(credits, stacked([later[name] for name in names]))
        scans = {name: jax.tree.map(lambda a, i=i: a[i], scanned) for i, name in enumerate(names)}
        cols = self.adapting_columns()
        columns = [scans[f"filter{k}"][1] for k in range(len(filters))]
        columns += [scans["a"][1][..., cols]] if "a" in scans else []
        sums = {"z": self.filtered_end(carries, xs, scans["z"][1][..., 0]),
                "psi": jnp.sum(unit * self.window_psi(carries, new_carries), axis=0)}
        if columns:  # the filtered traces' and the adaptation's columns, one product (window_carried splits it)
            sums["columns"] = self.window_rows(carries, xs, jnp.concatenate(columns, axis=-1), summed=False)
        return sums, {name: scan[0] for name, scan in scans.items()}

    def filtered_end(self, carries: Params, xs: jax.Array, P: jax.Array) -> Params:
        """``sum_t rows^t P^t`` of each example, ``P`` ``(T, *batch)``: the rows filtered by the leak."""
        return {name: jnp.einsum("t...i,t...->...i", row, P) if jnp.ndim(row) else jnp.sum(P, axis=0) * row
                for name, row in self.presynaptic_rows(carries, xs).items()}

    def adapting_columns(self):
        """The columns of the adaptation's eligibility vectors (none for a neuron without them)."""
        return None

    def window_carried(self, params: Params, traces: Params, earlier, traces_earlier, sums: Params, filters=()):
        """``(grads, traces, filtered)``: what the window's contractions owe to the traces carried into it,
        ``traces`` (``window_start``, from the gradient's backward state ``earlier`` at the window's first step), and
        the traces after the window, ``window_traces``'s ``sums`` (over the window, from its backward states
        ``traces_earlier`` at the first step) with the carried traces' part, all columns at once; ``filters``:
        ``(decay, weight, F0)`` of each filtered trace carried in, ``filtered`` theirs after the window."""
        grads = self.window_start(params, traces, earlier)
        P = traces_earlier["z"][0][..., 0]
        carried = self.leak_of(params, P) * P
        end = {"z": {name: z + (jnp.expand_dims(carried, -1) if jnp.ndim(z) > jnp.ndim(carried) else carried)
                     * traces["z"][name] for name, z in sums["z"].items()},
               "psi": sums["psi"]}
        cols = self.adapting_columns()
        if cols is None:
            if "a" in traces:  # no neuron adapts: nothing to carry
                end["a"] = traces["a"]
            if not filters:
                return grads, end, ()
        # each trace's columns as window_traces lays them: the filtered traces' (all neurons), the adaptation's
        parts = [(traces_earlier[f"filter{k}"], slice(None), (decay, k, F0))
                 for k, (decay, _, F0) in enumerate(filters)]
        parts += [(traces_earlier["a"], cols, None)] if cols is not None else []
        column = jnp.concatenate([self.start_column(params, traces, state)[..., c] for state, c, _ in parts], axis=-1)
        total = jax.tree.map(jnp.add, sums["columns"], self.rows_outer(traces["z"], column, summed=False))

        def extra(state, c, filtered):  # the carried eps_a0's part, and decay G^(t0) F0 of a filtered trace
            adapted = None if cols is None else self.carried_adaptation(traces, state[1], summed=False)
            if filtered is None:
                return {name: -adapted[name] for name in total}
            decay, k, F0 = filtered
            G = state[2][k]
            return {name: decay * F0[name] * (jnp.expand_dims(G, -2) if jnp.ndim(F0[name]) > jnp.ndim(G) else G)
                    - (0 if adapted is None else self.on_columns(adapted[name], cols)) for name in total}

        extras = [extra(*part) for part in parts]
        total = {name: g + jnp.concatenate([e[name] for e in extras], axis=-1) for name, g in total.items()}
        sizes = [self.hidden_size] * len(filters)
        split = {name: jnp.split(g, list(itertools.accumulate(sizes)), axis=-1) for name, g in total.items()}
        if cols is not None:
            end["a"] = {name: pieces[-1] for name, pieces in split.items()}
        return grads, end, tuple({name: split[name][k] for name in total} for k in range(len(filters)))

    def carried_adaptation(self, traces: Params, lam, summed: bool):
        """The carried adaptation vectors' part of the window's sums (``None``: a neuron without them)."""
        return None

    def window_lambda(self, zeros: jax.Array):
        """The adaptation's backward state at the window's end (none; ALIF's ``lambda``)."""
        return ()

    def window_adaptation(self, lam, g: jax.Array, psi: jax.Array):
        """One backward step of the adaptation's credit: ``(lambda^t, drop^t)`` (none for a neuron without one)."""
        return (), 0.0

    def window_psi(self, carries: Params, new_carries: Params) -> jax.Array:
        """Each step's ``psi`` from the carry it starts from and its new one, without the current: ``psi(u) free``,
        ``u = v' - threshold'`` (``window_threshold``; the membrane carried on is ``d`` where e-prop factorises, no
        reset to a value), ``free = [r == 0]`` of the carry the step starts from (``integrate``)."""
        psi = self.psi(new_carries["v"] - self.window_threshold(new_carries))
        return psi * (carries["r"] <= 0).astype(psi.dtype) if self.refractory else psi

    def window_threshold(self, new_carries: Params):
        """The threshold the step's spikes were fired against, from its new carry (each cell's)."""
        raise NotImplementedError

    def window_rows(self, carries: Params, xs: jax.Array, P: jax.Array, summed: bool = True) -> Params:
        """``sum_t rows^t (x) P^t`` over the window's steps and examples (leading axes ``(T, *batch)`` of
        ``carries``, the carry each step starts from, ``xs`` and ``P``), or over its steps only, each example's
        (``summed=False``): one matrix product per parameter (and example)."""
        rows = {name: jnp.broadcast_to(row, P.shape[:-1]) if jnp.ndim(row) == 0 else row
                for name, row in self.presynaptic_rows(carries, xs).items()}
        if summed:
            return self.summed_outer_rows(rows, P)
        # each example's (i x T) @ (T x j): a batched product (on a CPU, XLA's einsum over the same axes is slower)
        return {name: jnp.matmul(jnp.moveaxis(row, 0, -1), jnp.moveaxis(P, 0, -2))
                if len(self.param_shapes()[name]) == 2 else jnp.sum(row[..., None] * P, axis=0)
                for name, row in rows.items()}

    # -- the membrane's traces, shared (derivation: docs/spiking.md, "Resets") ------------------------------
    # Per parameter ``ed = dd/dtheta`` (the membrane the spike reads); per neuron, from the last step, ``psi``,
    # ``gate = dv/dd`` and ``jump = dv/ds`` (how the carried membrane follows d and the spike). Then
    # ``ds = psi ed`` (ALIF: ``psi (ed - beta ea)``), ``dv = gate ed + jump ds`` and
    # ``ed' = leak dv + drive - threshold ds [subtract]``.
    neuron_major: ClassVar[bool] = False  # SpikingIIR2 lays its traces out neuron-major

    def along(self, vector: jax.Array, trace: jax.Array) -> jax.Array:
        """A per-neuron ``vector`` (or one number for all) broadcast against a trace in its parameter's layout."""
        return vector[:, None] if self.neuron_major and trace.ndim == 2 and jnp.ndim(vector) == 1 else vector

    def reset_factors(self, new: dict[str, jax.Array], exact: bool = True) -> Params:
        """``psi(u)``, ``gate`` and ``jump`` of a step (``integrate``'s output); ``exact=False`` drops ``jump``, the
        reset's derivative through the spike, as e-prop does."""
        psi = self.psi(new["u"]) * new["free"] if self.refractory else self.psi(new["u"])
        if self.reset != "value":
            return {"psi": psi, "gate": jnp.ones_like(psi), "jump": jnp.zeros_like(psi)}
        return {"psi": psi, "gate": 1 - new["s"], "jump": (self.values("v_reset", psi) - new["d"]) * exact}

    def zero_factors(self, carry: Params) -> Params:
        zeros = jnp.zeros((self.hidden_size,), carry["v"].dtype)
        return {"psi": zeros, "gate": zeros, "jump": zeros}

    def spike_sensitivity(self, traces: Params, name: str) -> jax.Array:
        """``ds/dtheta = psi ed``: the spike's sensitivity of the step the traces stand at."""
        return self.along(traces["psi"], traces["v"][name]) * traces["v"][name]

    def eprop_output(self, params: Params, traces: Params) -> Params:
        """e-prop's eligibility trace ``e = ds/dtheta`` of the step its vectors stand at, for every parameter
        (``rtrl.capabilities.BellecEProp``; LIF and ALIF lay it out like the parameters)."""
        return {name: self.spike_sensitivity(traces, name) for name in traces["v"]}

    def membrane_sensitivity(self, traces: Params, name: str) -> jax.Array:
        """``dv/dtheta = gate ed + jump ds`` of the carried membrane."""
        ed = traces["v"][name]
        return self.along(traces["gate"], ed) * ed + self.along(traces["jump"], ed) * self.spike_sensitivity(
            traces, name)

    def membrane_trace(self, params: Params, traces: Params, drive: Params, exact: bool = True) -> Params:
        """``ed'`` for every parameter: ``leak dv + drive - threshold ds`` (the last term with ``reset="subtract"``
        and ``exact`` only; e-prop drops it)."""
        leak = self.leak_of(params, traces["psi"])
        subtract = self.values("threshold", traces["psi"]) * (self.reset == "subtract" and exact)
        return {name: self.along(leak, ed) * self.membrane_sensitivity(traces, name) + drive[name]
                - self.along(subtract, ed) * self.spike_sensitivity(traces, name) for name, ed in traces["v"].items()}

    def membrane_contract(self, traces: Params, g_carry: Params) -> Params:
        """``g_v dv + g_s ds`` for every parameter, of the step the traces stand at."""
        psi = traces["psi"]
        g_v, g_s = credit(g_carry["v"], psi), credit(g_carry["s"], psi)
        return {name: self.along(g_v, ed) * self.membrane_sensitivity(traces, name)
                + self.along(g_s, ed) * self.spike_sensitivity(traces, name) for name, ed in traces["v"].items()}


def credit(g: jax.Array | None, like: jax.Array) -> jax.Array:
    """A credit leaf, ``None`` (no credit) read as zeros."""
    return jnp.zeros_like(like) if g is None else g
