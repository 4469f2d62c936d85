"""A spiking neuron on seed 001's second-order dynamics: an IIR2-filtered synaptic current into a LIF membrane.

Forward, one example: input row ``x`` (D,), carry ``{z1, z2, y1, y2, v, s}`` (the filter's last two inputs and
outputs as in ``rtrl.cells.iir2``, the membrane, the last spikes; zero at start)::

    z  = x @ W + b  (+ s @ R with recurrent=True)                     the input current of rtrl.cells.spiking
    y  = z + b0*z1 + b1*z2 - a0*y1 - a1*y2                            the synaptic current: seed 001's IIR2 filter
    v' = leak * v + y - threshold * s                                 a LIF membrane, reset by subtraction
    s' = H(v' - threshold)                                            h = s'

Why the filter sits on the current and not on the membrane: the reset then acts on a first-order state, as in a
LIF neuron, and the filter stays linear, so (1) seed 001's stability triangle ``|a1| < 1, |a0| < 1 + a1`` and the
``"stable"`` parameterisation hold unchanged whatever the spikes do (a reset subtracted inside a second-order
membrane would feed back through ``a0, a1`` and could destabilise it); (2) the filter's closed-form traces are
seed 001's, unchanged, and the membrane adds one first-order trace on top; (3) it generalises the current-based
LIF (``CubaLIF`` of NIR, snntorch's ``Synaptic``: a first-order synapse, here ``a0 = -decay, a1 = b0 = b1 = 0``)
to a second-order, possibly resonant (band-pass) synapse, which is what ``rtrl.export`` maps to and from NIR.

Closed-form traces (no ``R``; derivation: docs/spiking.md). The filter keeps seed 001's traces ``F``
(``rtrl.cells.iir2``: ``dy/dtheta`` for every parameter, neuron-major); the membrane keeps ``ev = dv/dtheta``
(neuron-major too), driven by the new filter trace ``F'.y1 = dy/dtheta``::

    ev'[theta] = (leak - threshold * psi) ev[theta] + F'.y1[theta]       psi = psi(v - threshold), previous step
    dL/dtheta  = (filter's contraction of g_z1 .. g_y2) + (g_v + g_s psi') ev'

Memory: three times the parameters plus two inputs and one ``(N,)`` vector.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.elementwise import neuron_major_to_params
from rtrl.cells.iir2 import CARRY, IIR2, check_parameterisation, filter_step, filter_trace_contract
from rtrl.cells.spiking import SpikingCell, credit


class SpikingIIR2(SpikingCell):
    """``SpikingIIR2(input_size, hidden_size, parameterisation="seed", ...)`` with ``LIF``'s options;
    ``parameterisation`` as ``IIR2``'s (``"seed"``: ``a0, a1, b0, b1``; ``"stable"``: ``c_k1, c_k2, b0, b1``).
    See the module docstring."""

    parameterisation: str = "seed"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_parameterisation(self.parameterisation)

    @property
    def synapse(self) -> IIR2:
        """The filter as an ``IIR2`` cell (identity activation): its parameters, step and traces are reused."""
        return IIR2(self.input_size, self.hidden_size, parameterisation=self.parameterisation, activation="identity")

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return {**self.synapse.param_shapes(), **self.input_shapes()}

    def init_param(self, name, shape, key, dtype):
        return self.synapse.init_param(name, shape, key, dtype)

    def carry_sizes(self) -> dict[str, int]:
        return {**self.synapse.carry_sizes(), "v": self.hidden_size, "s": self.hidden_size}

    def filter_params(self, params: Params) -> Params:
        return {name: params[name] for name in self.synapse.param_shapes()}

    def coefficients(self, params: Params, x: jax.Array | None = None) -> tuple[jax.Array, ...]:
        """The synaptic filter's ``(a0, a1, b0, b1)`` (``IIR2.coefficients``): what ``rtrl.cells.stability`` reads,
        so the stability triangle is checked on this cell as on an ``IIR2``."""
        return self.synapse.coefficients(self.filter_params(params), x)

    def advance(self, params: Params, carry: Params, x: jax.Array) -> Params:
        coefficients = self.coefficients(params)
        synapse = filter_step({name: carry[name] for name in CARRY}, self.current(params, carry, x), coefficients)
        v = self.leak * carry["v"] + synapse["y1"] - self.threshold * carry["s"]
        return {**synapse, "v": v, "s": self.fire(v - self.threshold)}

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def closed_form_init(self, params: Params, carry: Params) -> Params:
        synapse = self.synapse.trace_init(self.filter_params(params), carry)
        return {"synapse": synapse, "v": jax.tree.map(jnp.zeros_like, synapse["y1"]),
                "psi": jnp.zeros((self.hidden_size,), carry["v"].dtype)}

    def closed_form_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        synapse = self.synapse.trace_update(self.filter_params(params), carry, traces["synapse"], x)
        decay = self.leak - self.threshold * traces["psi"]
        ev = {name: (decay[:, None] if e.ndim == 2 else decay) * e + synapse["y1"][name]
              for name, e in traces["v"].items()}
        new_v = self.advance(params, carry, x)["v"]
        return {"synapse": synapse, "v": ev, "psi": self.psi(new_v - self.threshold)}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        psi = traces["psi"]
        grads = filter_trace_contract(traces["synapse"], {name: g_carry[name] for name in CARRY})
        g = credit(g_carry["v"], psi) + credit(g_carry["s"], psi) * psi
        grads = {name: grads[name] + (g[:, None] if e.ndim == 2 else g) * e for name, e in traces["v"].items()}
        return neuron_major_to_params(grads, ("W",))
