"""Leaky integrate-and-fire neurons (LIF), with three resets; forward equations and closed-form traces.

Forward, one example: input row ``x`` (D,), carry ``{v, s}`` = the membrane and the last spikes (zero at
start); ``psi`` the surrogate derivative and ``I`` the current of ``rtrl.cells.spiking``::

    d  = leak * v + I  (- threshold * s with reset="subtract")     (I = x @ W + b, + s @ R with recurrent=True)
    s' = H(d - threshold)                                          h = s'
    v' = d + s' (v_reset - d)   with reset="value", else v' = d

``reset="subtract"`` (the default) subtracts the threshold one step after the spike that caused it (Bellec et al.
2020's convention), so a neuron driven far above threshold may fire on consecutive steps; ``reset="value"`` sets
the membrane to ``v_reset`` in the spike's own step (NIR's neurons, snnTorch's ``reset_mechanism="zero"``, Norse);
``reset="none"`` never resets.

Closed-form traces (no ``R``; derivation: docs/spiking.md, the shared part in ``SpikingCell``). For ``theta`` in
``{W, b}`` keep ``ed = dd/dtheta`` in the parameter's own layout and, per neuron, the last step's ``psi``, ``gate``
(``dv/dd``: ``1 - s`` with ``reset="value"``, else 1) and ``jump`` (``dv/ds``: ``v_reset - d``, else 0)::

    ds  = psi ed,    dv = gate ed + jump ds
    ed' = leak dv + dI/dtheta - threshold ds [subtract]         dI/dW = x (x) 1,  dI/db = 1
    dL/dtheta = g_v dv' + g_s ds'                               of the new step's ed', psi', gate', jump'

With the default reset this is ``ed' = (leak - threshold psi) ed + dI/dtheta``. Memory: the parameters plus three
``(N,)`` vectors.

e-prop (Bellec et al. 2020, Methods, LIF): the eligibility vector is the membrane's own sensitivity with the reset's
derivative through the spike and every path through spikes (recurrent weights included) dropped,
``eps' = leak gate eps + dI/dtheta`` (``x``, 1, or the last spikes for ``R``: a low-pass filter of the presynaptic
activity, gated off at a reset to a value), and the eligibility trace is ``e = psi' eps'``; ``eprop_init /
eprop_update / eprop_contract`` hold it (with or without ``R``).
With one leak for all neurons (not learnt) and no reset to a value, ``eps`` is the same for every postsynaptic
neuron, ``zbar``, the presynaptic activity filtered by the leak, so ``e_ji = psi_j zbar_i``: ``eprop_factored_*``
keep ``zbar`` and ``psi`` only, the same gradient (``SpikingCell.eprop_factorises``).

e-prop over a window (``eprop_window``, ``rtrl.capabilities.WindowEProp``; derivation: docs/spiking.md, "e-prop
over a window"): the factorised contractions summed over a window of steps from zero traces, with the credits
``g_v^t, g_s^t`` on each step's new carry, need no trace at all. With ``p^t = g_v^t + g_s^t psi^t``::

    sum_t zbar^t (x) p^t  =  sum_t rows^t (x) P^t,     P^t = p^t + leak P^(t+1)     (rows: x, 1, s_prev)

a backward scan of per-neuron vectors and one matrix product per parameter (``SpikingCell.factored_eprop_window``;
``psi^t`` from the new carry, ``u = v' - threshold``: ``window_threshold``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.spiking import SpikingCell, credit


class LIF(SpikingCell):
    """``LIF(input_size, hidden_size, leak=0.9, threshold=1.0, surrogate="fast_sigmoid", surrogate_scale=5.0,
    surrogate_height=1.0, recurrent=False, reset="subtract", v_reset=0.0)``; ``leak``, ``threshold`` and ``v_reset``
    one number or one per neuron (``SpikingCell``). See the module docstring."""

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return self.input_shapes()

    def carry_sizes(self) -> dict[str, int]:
        return {"v": self.hidden_size, "s": self.hidden_size, **self.refractory_carry()}

    def membrane_step(self, params: Params, carry: Params, x: jax.Array) -> dict[str, jax.Array]:
        v = carry["v"]
        return self.integrate(self.leak_of(params, v) * v + self.current(params, carry, x), carry,
                              self.values("threshold", v))

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def closed_form_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        return {"v": {name: jnp.zeros(jnp.shape(params[name]), dtype) for name in ("W", "b", *self.tau_shapes())},
                **self.zero_factors(carry)}

    def closed_form_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        drive = {"W": x[:, None], "b": 1.0, **self.leak_drive(params, carry)}
        return {"v": self.membrane_trace(params, traces, drive),
                **self.reset_factors(self.membrane_step(params, carry, x))}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return self.membrane_contract(traces, g_carry)

    # -- e-prop's eligibility traces (Bellec et al. 2020), with or without recurrent weights ------------------
    def eprop_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        return {"v": {name: jnp.zeros(jnp.shape(p), dtype) for name, p in params.items()},
                **self.zero_factors(carry)}

    def eprop_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        drive = {**self.presynaptic(carry, x), **self.leak_drive(params, carry)}
        return {"v": self.membrane_trace(params, traces, drive, exact=False),
                **self.reset_factors(self.membrane_step(params, carry, x), exact=False)}

    def eprop_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return self.membrane_contract(traces, g_carry)

    # -- e-prop factorised (rtrl.capabilities.FactoredEProp; SpikingCell.eprop_factorises): the same eligibility --
    # traces from ``zbar`` (per presynaptic entry) and ``psi`` (per neuron): ``eps = zbar (x) 1``, ``e = zbar (x) psi``
    def factored_eprop_init(self, params: Params, carry: Params) -> Params:
        return self.factored_zeros(params, carry)

    def factored_eprop_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        return {"z": self.filtered_rows(params, carry, traces, x), "psi": self.eprop_psi(params, carry, x)}

    def factored_eprop_output(self, params: Params, traces: Params) -> Params:
        return self.outer_rows(traces["z"], traces["psi"])

    def factored_eprop_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        """``g_v eps + g_s e = zbar (x) (g_v + g_s psi)``, summed over any leading axes of examples."""
        psi = traces["psi"]
        return self.summed_outer_rows(traces["z"], credit(g_carry["v"], psi) + credit(g_carry["s"], psi) * psi)

    def window_threshold(self, new_carries: Params):
        """``threshold``."""
        return self.values("threshold", new_carries["v"])
