"""Leaky integrate-and-fire neurons (LIF), reset by subtraction; forward equations and closed-form traces.

Forward, one example: input row ``x`` (D,), carry ``{v, s}`` = the membrane and the last spikes (zero at
start); ``psi`` the surrogate derivative and ``I`` the current of ``rtrl.cells.spiking``::

    v' = leak * v + I - threshold * s          (I = x @ W + b, + s @ R with recurrent=True)
    s' = H(v' - threshold)                     h = s'

The reset subtracts the threshold one step after the spike that caused it (Bellec et al. 2020's convention), so a
neuron driven far above threshold may fire on consecutive steps.

Closed-form traces (no ``R``; derivation: docs/spiking.md). For ``theta`` in ``{W, b}`` keep ``ev = dv/dtheta``
in the parameter's own layout. The spike's sensitivity is ``ds/dtheta = psi(v - threshold) ev`` (``psi`` of the
same step), so one trace per parameter suffices; the reset makes it enter the next membrane's::

    ev'[W] = (leak - threshold * psi) ev[W] + x (x) 1          psi = psi(v - threshold), from the previous step
    ev'[b] = (leak - threshold * psi) ev[b] + 1
    dL/dtheta = (g_v + g_s psi') ev'                            psi' = psi(v' - threshold), kept in the traces

Memory: the parameters plus one ``(N,)`` vector.

e-prop (Bellec et al. 2020, Methods, LIF): the eligibility vector is the membrane's own sensitivity with the reset's
derivative and every path through spikes (recurrent weights included) dropped, ``eps' = leak * eps + dI/dtheta``
(``x``, 1, or the last spikes for ``R``: a low-pass filter of the presynaptic activity), and the eligibility trace
is ``e = psi' eps'``; ``eprop_init / eprop_update / eprop_contract`` hold it (with or without ``R``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.spiking import SpikingCell, credit


class LIF(SpikingCell):
    """``LIF(input_size, hidden_size, leak=0.9, threshold=1.0, surrogate="fast_sigmoid", surrogate_scale=5.0,
    surrogate_height=1.0, recurrent=False)``; see the module docstring."""

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return self.input_shapes()

    def carry_sizes(self) -> dict[str, int]:
        return {"v": self.hidden_size, "s": self.hidden_size}

    def advance(self, params: Params, carry: Params, x: jax.Array) -> Params:
        v = self.leak * carry["v"] + self.current(params, carry, x) - self.threshold * carry["s"]
        return {"v": v, "s": self.fire(v - self.threshold)}

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def closed_form_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        return {"v": {name: jnp.zeros(jnp.shape(params[name]), dtype) for name in ("W", "b")},
                "psi": jnp.zeros((self.hidden_size,), dtype)}

    def closed_form_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        decay = self.leak - self.threshold * traces["psi"]
        ev = traces["v"]
        new_v = self.advance(params, carry, x)["v"]
        return {"v": {"W": decay * ev["W"] + x[:, None], "b": decay * ev["b"] + 1},
                "psi": self.psi(new_v - self.threshold)}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        psi = traces["psi"]
        g = credit(g_carry["v"], psi) + credit(g_carry["s"], psi) * psi
        return {name: g * e for name, e in traces["v"].items()}

    # -- e-prop's eligibility traces (Bellec et al. 2020), with or without recurrent weights ------------------
    def eprop_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        return {"v": {name: jnp.zeros(jnp.shape(p), dtype) for name, p in params.items()},
                "psi": jnp.zeros((self.hidden_size,), dtype)}

    def eprop_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        drive = self.presynaptic(carry, x)
        new_v = self.advance(params, carry, x)["v"]
        return {"v": {name: self.leak * e + drive[name] for name, e in traces["v"].items()},
                "psi": self.psi(new_v - self.threshold)}

    def eprop_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return self.closed_form_contract(params, traces, g_carry)
