"""Adaptive leaky integrate-and-fire neurons (ALIF, the LSNN's neurons of Bellec et al. 2018, 2020).

Forward, one example: input row ``x`` (D,), carry ``{v, a, s}`` = the membrane, the adaptation and the last spikes
(zero at start); ``psi`` the surrogate derivative and ``I`` the current of ``rtrl.cells.spiking``. Each spike raises
the neuron's threshold by ``adaptation`` (beta), decaying by ``adaptation_decay`` (rho) per step::

    d  = leak * v + I  (- threshold * s with reset="subtract")     (I = x @ W + b, + s @ R with recurrent=True)
    a' = rho * a + s
    s' = H(d - threshold - beta * a')                             h = s'
    v' = d + s' (v_reset - d)   with reset="value", else v' = d

(Bellec et al. 2020's equations with the default reset, their ``v_th`` = ``threshold``: the reset subtracts the
base threshold; the resets as ``LIF``'s.) ``lif_neurons = k`` makes the first ``k`` neurons plain LIF neurons
(``beta = 0`` for them, the others ``adaptation``): the paper's layer of LIF and ALIF neurons in one population
(its evidence-accumulation network: 50 of each, ``beta`` a vector with zeros for the LIF half). Every equation
below holds per neuron with that vector ``beta``.

Closed-form traces (no ``R``; derivation: docs/spiking.md). For ``theta`` in ``{W, b}`` keep ``ed = dd/dtheta``
and ``ea = da/dtheta`` in the parameter's layout, and ``LIF``'s per-neuron ``psi, gate, jump``. The spike's
sensitivity is ``ds = psi (ed - beta ea)``; it reaches the next membrane through the reset and the next
adaptation directly::

    dv     = gate ed + jump ds
    ed'    = leak dv + dI/dtheta - threshold ds [subtract]     dI/dW = x (x) 1,  dI/db = 1
    ea'    = rho ea + ds
    dL/dtheta = g_v dv' + g_a ea' + g_s ds'

Memory: twice the parameters plus three ``(N,)`` vectors.

e-prop (Bellec et al. 2020, Methods, ALIF): the eligibility vector ``(eps_v, eps_a)`` is the neuron's own state
sensitivity with the reset's derivative through the spike and every path through spikes to *other* state
(recurrent weights) dropped; the adaptation's own dependence on the spike stays::

    eps_v' = leak gate eps_v + dI/dtheta                   (x, 1, or the last spikes for R)
    eps_a' = psi eps_v + (rho - psi beta) eps_a             psi from the previous step
    e'     = psi' (eps_v' - beta eps_a')                    the eligibility trace

With one leak for all neurons (not learnt) and no reset to a value, ``eps_v`` is LIF's ``zbar (x) 1`` (shared by the
postsynaptic neurons) and ``eps_a`` reaches ``e`` only where ``beta != 0``: ``eprop_factored_*`` keep ``zbar``,
``psi`` and ``eps_a`` for the adapting neurons only, the same gradient (``SpikingCell.eprop_factorises``).

e-prop over a window (``eprop_window``, ``rtrl.capabilities.WindowEProp``; derivation: docs/spiking.md, "e-prop
over a window"): the factorised contractions summed over a window from zero traces need no trace. ``eps_a`` moves
onto a per-neuron credit ``lambda``, backwards, then ``zbar`` onto the rows as ``LIF``'s::

    w^t      = g_s^t psi^t beta                          (the credit on -eps_a^t)
    lambda^t = w^t + (rho - psi^t beta) lambda^(t+1)      (cut where step t+1 starts an episode)
    p^t      = g_v^t + g_s^t psi^t - psi^t lambda^(t+1)
    sum_t contract^t = sum_t zbar^t (x) p^t = sum_t rows^t (x) P^t,    P^t = p^t + leak P^(t+1)

(``sum_t w^t eps_a^t = sum_t psi^t zbar^t lambda^(t+1)``, from ``eps_a^(t+1) = (rho - psi^t beta) eps_a^t + psi^t
zbar^t``.) ``lambda`` is zero where ``beta`` is. ``lambda`` and ``P`` are one backward scan
(``SpikingCell.factored_eprop_window``, ``window_adaptation``), ``psi^t`` from the new carry (``window_threshold``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from rtrl.cells.base import Params
from rtrl.cells.spiking import SpikingCell, credit, set_numbers


class ALIF(SpikingCell):
    """``ALIF(input_size, hidden_size, adaptation=0.1, adaptation_decay=0.95, lif_neurons=0, ...)`` with ``LIF``'s
    options; ``adaptation`` (beta) >= 0, ``adaptation_decay`` (rho) in (0, 1), ``lif_neurons`` in
    ``0 .. hidden_size`` (how many neurons, the first ones, do not adapt); ``adaptation`` and ``adaptation_decay``
    one number or one per neuron, as ``leak``, ``threshold`` and ``v_reset`` (``SpikingCell``). See the module
    docstring."""

    adaptation: float = 0.1
    adaptation_decay: float = 0.95
    lif_neurons: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        set_numbers(self, "adaptation", 0.0, open_low=False)
        set_numbers(self, "adaptation_decay", 0.0, 1.0)
        n = self.lif_neurons
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= self.hidden_size:
            raise ValueError(f"lif_neurons must be an integer in 0..hidden_size ({self.hidden_size}), got {n!r}")

    def beta(self, like: jax.Array) -> jax.Array:
        """The per-neuron adaptation strength: 0 for the first ``lif_neurons`` neurons, ``adaptation`` after."""
        neuron = jnp.arange(self.hidden_size)
        return jnp.where(neuron < self.lif_neurons, 0.0, self.values("adaptation", like)).astype(like.dtype)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return self.input_shapes()

    def carry_sizes(self) -> dict[str, int]:
        return {"v": self.hidden_size, "a": self.hidden_size, "s": self.hidden_size, **self.refractory_carry()}

    def membrane_step(self, params: Params, carry: Params, x: jax.Array) -> dict[str, jax.Array]:
        v = carry["v"]
        a = self.values("adaptation_decay", v) * carry["a"] + carry["s"]
        new = self.integrate(self.leak_of(params, v) * v + self.current(params, carry, x), carry,
                             self.values("threshold", v) + self.beta(a) * a)
        return {**new, "a": a}

    def spike_sensitivity(self, traces: Params, name: str) -> jax.Array:
        """``ds/dtheta = psi (ed - beta ea)``."""
        return traces["psi"] * (traces["v"][name] - self.beta(traces["psi"]) * traces["a"][name])

    def adaptation_trace(self, traces: Params) -> Params:
        """``ea' = rho ea + ds`` (e-prop keeps it too)."""
        rho = self.values("adaptation_decay", traces["psi"])
        return {name: rho * ea + self.spike_sensitivity(traces, name) for name, ea in traces["a"].items()}

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def closed_form_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        zeros = {name: jnp.zeros(jnp.shape(params[name]), dtype) for name in ("W", "b", *self.tau_shapes())}
        return {"v": zeros, "a": zeros, **self.zero_factors(carry)}

    def closed_form_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        drive = {"W": x[:, None], "b": 1.0, **self.leak_drive(params, carry)}
        return {"v": self.membrane_trace(params, traces, drive), "a": self.adaptation_trace(traces),
                **self.reset_factors(self.membrane_step(params, carry, x))}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        g_a = credit(g_carry["a"], traces["psi"])
        return {name: g + g_a * traces["a"][name] for name, g in self.membrane_contract(traces, g_carry).items()}

    # -- e-prop's eligibility traces (Bellec et al. 2020), with or without recurrent weights ------------------
    def eprop_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        zeros = {name: jnp.zeros(jnp.shape(p), dtype) for name, p in params.items()}
        return {"v": zeros, "a": zeros, **self.zero_factors(carry)}

    def eprop_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        drive = {**self.presynaptic(carry, x), **self.leak_drive(params, carry)}
        return {"v": self.membrane_trace(params, traces, drive, exact=False),
                "a": self.adaptation_trace(traces),
                **self.reset_factors(self.membrane_step(params, carry, x), exact=False)}

    def eprop_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return self.closed_form_contract(params, traces, g_carry)

    # -- e-prop factorised (rtrl.capabilities.FactoredEProp; SpikingCell.eprop_factorises): LIF's ``zbar`` and --
    # ``psi``, and ``eps_a`` per synapse for the adapting neurons only (``beta != 0``: ``adapting``), whose columns
    # are the only ones through which ``eps_a`` reaches ``e = psi (zbar (x) 1 - beta eps_a)``
    def adapting(self) -> slice | np.ndarray:
        """The neurons with ``beta != 0``, as a slice where they are consecutive (``lif_neurons`` first)."""
        beta = np.where(np.arange(self.hidden_size) < self.lif_neurons, 0.0,
                        np.broadcast_to(self.adaptation, (self.hidden_size,)))
        neurons = np.flatnonzero(beta)
        if neurons.size == 0 or np.array_equal(neurons, np.arange(neurons[0], neurons[-1] + 1)):
            return slice(int(neurons[0]), int(neurons[-1]) + 1) if neurons.size else slice(0, 0)
        return neurons

    def adapting_count(self) -> int:
        """How many neurons adapt (``adapting``)."""
        return np.arange(self.hidden_size)[self.adapting()].size

    def factored_eprop_init(self, params: Params, carry: Params) -> Params:
        m, dtype = self.adapting_count(), carry["v"].dtype
        return {**self.factored_zeros(params, carry),
                "a": {name: jnp.zeros(jnp.shape(p)[:-1] + (m,), dtype) for name, p in params.items()}}

    def factored_eprop_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        """``ea' = rho ea + psi (zbar (x) 1 - beta ea)`` on the adapting columns (``adaptation_trace``)."""
        cols, psi = self.adapting(), traces["psi"]
        rho = self.values("adaptation_decay", psi)
        rho, beta, psi_a = (rho if jnp.ndim(rho) == 0 else rho[cols]), self.beta(psi)[cols], psi[cols]
        a = {name: rho * ea + psi_a * (jnp.expand_dims(traces["z"][name], -1) - beta * ea)
             for name, ea in traces["a"].items()}
        return {"z": self.filtered_rows(params, carry, traces, x), "a": a, "psi": self.eprop_psi(params, carry, x)}

    def factored_eprop_output(self, params: Params, traces: Params) -> Params:
        """``e = zbar (x) psi - eps_a (psi beta)``, the last on the adapting columns."""
        cols, psi = self.adapting(), traces["psi"]
        adapted = (psi * self.beta(psi))[..., cols]
        return {name: e - self.on_columns(traces["a"][name] * adapted, cols)
                for name, e in self.outer_rows(traces["z"], psi).items()}

    def on_columns(self, a: jax.Array, cols) -> jax.Array:
        """``a`` (..., adapting neurons) laid on all neurons' columns, zeros elsewhere."""
        if isinstance(cols, slice):  # a pad, which XLA fuses with what reads it
            return jnp.pad(a, [(0, 0)] * (a.ndim - 1) + [(cols.start, self.hidden_size - cols.stop)])
        return jnp.zeros(a.shape[:-1] + (self.hidden_size,), a.dtype).at[..., cols].set(a)

    def factored_eprop_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        """``g_v eps_v + g_s e = zbar (x) (g_v + g_s psi) - eps_a (g_s psi beta)`` (the last on the adapting columns),
        summed over any leading axes of examples. ``eps_a`` is kept for the adapting neurons only, so a credit on ``a``
        needs ``eprop_contract``."""
        if g_carry.get("a") is not None:
            raise ValueError("the factorised e-prop traces keep eps_a for the adapting neurons only; a credit on the "
                             "adaptation needs eprop_contract")
        cols, psi = self.adapting(), traces["psi"]
        g_s = credit(g_carry["s"], psi) * psi
        grads = self.summed_outer_rows(traces["z"], credit(g_carry["v"], psi) + g_s)
        if not self.adapting_count():
            return grads
        drop = (g_s * self.beta(psi))[..., cols]
        spec = {name: "...ik,...k->ik" if len(shape) == 2 else "...k,...k->k"
                for name, shape in self.param_shapes().items()}
        return {name: g.at[..., cols].add(-jnp.einsum(spec[name], traces["a"][name], drop))
                for name, g in grads.items()}

    def adapting_columns(self):
        """``adapting`` where some neuron adapts (the columns of ``eps_a``), else ``None``."""
        return self.adapting() if self.adapting_count() else None

    def carried_adaptation(self, traces: Params, lam: jax.Array, summed: bool):
        """``eps_a0 (x) (rho - psi0 beta) lambda`` on the adapting columns (``None`` where no neuron adapts), summed
        over the examples or each example's: the carried ``eps_a0`` reaches the window through ``eps_a^(t0) = (rho -
        psi0 beta) eps_a0 + psi0 zbar0`` (the second term is ``SpikingCell.start_column``'s)."""
        if not self.adapting_count():
            return None
        cols, psi = self.adapting(), traces["psi"]
        weight = ((self.values("adaptation_decay", psi) - psi * self.beta(psi)) * lam)[..., cols]
        shapes = self.param_shapes()
        if summed:
            return {name: jnp.einsum("...ik,...k->ik" if len(shapes[name]) == 2 else "...k,...k->k", ea, weight)
                    for name, ea in traces["a"].items()}
        return {name: ea * (jnp.expand_dims(weight, -2) if len(shapes[name]) == 2 else weight)
                for name, ea in traces["a"].items()}

    def start_adaptation(self, grads: Params, traces: Params, lam: jax.Array) -> Params:
        """``- carried_adaptation`` laid on all the columns."""
        carried = self.carried_adaptation(traces, lam, summed=True)
        if carried is None:
            return grads
        return {name: g - self.on_columns(carried[name], self.adapting()) for name, g in grads.items()}

    def window_threshold(self, new_carries: Params):
        """``threshold + beta a'``."""
        a = new_carries["a"]
        return self.values("threshold", new_carries["v"]) + self.beta(a) * a

    def window_lambda(self, zeros: jax.Array) -> jax.Array:
        """``lambda`` after the window's last step: zero."""
        return zeros

    def window_adaptation(self, lam: jax.Array, g: jax.Array, psi: jax.Array):
        """``lambda^t = g^t beta + (rho - psi^t beta) lambda^(t+1)`` and ``drop^t = psi^t lambda^(t+1)`` (module
        docstring; ``g^t = g_s^t psi^t``), ``lam`` being ``lambda^(t+1)``."""
        beta, rho = self.beta(psi), self.values("adaptation_decay", psi)
        return g * beta + (rho - psi * beta) * lam, psi * lam
