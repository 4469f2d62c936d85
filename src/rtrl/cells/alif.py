"""Adaptive leaky integrate-and-fire neurons (ALIF, the LSNN's neurons of Bellec et al. 2018, 2020).

Forward, one example: input row ``x`` (D,), carry ``{v, a, s}`` = the membrane, the adaptation and the last spikes
(zero at start); ``psi`` the surrogate derivative and ``I`` the current of ``rtrl.cells.spiking``. Each spike raises
the neuron's threshold by ``adaptation`` (beta), decaying by ``adaptation_decay`` (rho) per step::

    v' = leak * v + I - threshold * s            (I = x @ W + b, + s @ R with recurrent=True)
    a' = rho * a + s
    s' = H(v' - threshold - beta * a')           h = s'

(Bellec et al. 2020's equations, with their ``v_th`` = ``threshold``: the reset subtracts the base threshold.)

Closed-form traces (no ``R``; derivation: docs/spiking.md). For ``theta`` in ``{W, b}`` keep ``ev = dv/dtheta``
and ``ea = da/dtheta`` in the parameter's layout. The spike's sensitivity is ``psi (ev - beta ea)`` (``psi`` of the
same step's ``u = v - threshold - beta a``); it reaches the next membrane through the reset and the next
adaptation directly::

    ds     = psi * (ev - beta * ea)                   psi from the previous step
    ev'    = leak * ev + dI/dtheta - threshold * ds    dI/dW = x (x) 1,  dI/db = 1
    ea'    = rho * ea + ds
    dL/dtheta = g_v ev' + g_a ea' + g_s psi' (ev' - beta ea')

Memory: twice the parameters plus one ``(N,)`` vector.

e-prop (Bellec et al. 2020, Methods, ALIF): the eligibility vector ``(eps_v, eps_a)`` is the neuron's own state
sensitivity with the reset's derivative and every path through spikes to *other* state (recurrent weights) dropped;
the adaptation's own dependence on the spike stays::

    eps_v' = leak * eps_v + dI/dtheta                    (x, 1, or the last spikes for R)
    eps_a' = psi * eps_v + (rho - psi * beta) * eps_a     psi from the previous step
    e'     = psi' * (eps_v' - beta * eps_a')              the eligibility trace
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.spiking import SpikingCell, check_number, credit


class ALIF(SpikingCell):
    """``ALIF(input_size, hidden_size, adaptation=0.1, adaptation_decay=0.95, ...)`` with ``LIF``'s options;
    ``adaptation`` (beta) >= 0, ``adaptation_decay`` (rho) in (0, 1). See the module docstring."""

    adaptation: float = 0.1
    adaptation_decay: float = 0.95

    def __post_init__(self) -> None:
        super().__post_init__()
        check_number("adaptation", self.adaptation, 0.0, open_low=False)
        check_number("adaptation_decay", self.adaptation_decay, 0.0, 1.0)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return self.input_shapes()

    def carry_sizes(self) -> dict[str, int]:
        return {"v": self.hidden_size, "a": self.hidden_size, "s": self.hidden_size}

    def distance(self, v: jax.Array, a: jax.Array) -> jax.Array:
        """``u = v - threshold - beta a``: how far the membrane is above its adapted threshold."""
        return v - self.threshold - self.adaptation * a

    def advance(self, params: Params, carry: Params, x: jax.Array) -> Params:
        v = self.leak * carry["v"] + self.current(params, carry, x) - self.threshold * carry["s"]
        a = self.adaptation_decay * carry["a"] + carry["s"]
        return {"v": v, "a": a, "s": self.fire(self.distance(v, a))}

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def closed_form_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        zeros = {name: jnp.zeros(jnp.shape(params[name]), dtype) for name in ("W", "b")}
        return {"v": zeros, "a": zeros, "psi": jnp.zeros((self.hidden_size,), dtype)}

    def closed_form_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        immediate = {"W": x[:, None], "b": 1.0}
        ds = {name: traces["psi"] * (ev - self.adaptation * traces["a"][name]) for name, ev in traces["v"].items()}
        new = self.advance(params, carry, x)
        return {"v": {name: self.leak * ev + immediate[name] - self.threshold * ds[name]
                      for name, ev in traces["v"].items()},
                "a": {name: self.adaptation_decay * ea + ds[name] for name, ea in traces["a"].items()},
                "psi": self.psi(self.distance(new["v"], new["a"]))}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        psi = traces["psi"]
        g_v, g_a, g_s = (credit(g_carry[leaf], psi) for leaf in ("v", "a", "s"))
        return {name: g_v * ev + g_a * traces["a"][name] + g_s * psi * (ev - self.adaptation * traces["a"][name])
                for name, ev in traces["v"].items()}

    # -- e-prop's eligibility traces (Bellec et al. 2020), with or without recurrent weights ------------------
    def eprop_init(self, params: Params, carry: Params) -> Params:
        dtype = carry["v"].dtype
        zeros = {name: jnp.zeros(jnp.shape(p), dtype) for name, p in params.items()}
        return {"v": zeros, "a": zeros, "psi": jnp.zeros((self.hidden_size,), dtype)}

    def eprop_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        drive, psi, beta = self.presynaptic(carry, x), traces["psi"], self.adaptation
        new = self.advance(params, carry, x)
        return {"v": {name: self.leak * e + drive[name] for name, e in traces["v"].items()},
                "a": {name: psi * traces["v"][name] + (self.adaptation_decay - psi * beta) * e
                      for name, e in traces["a"].items()},
                "psi": self.psi(self.distance(new["v"], new["a"]))}

    def eprop_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        return self.closed_form_contract(params, traces, g_carry)
