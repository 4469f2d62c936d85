"""A spiking neuron on seed 001's second-order dynamics: an IIR2-filtered synaptic current into a LIF membrane.

Forward, one example: input row ``x`` (D,), carry ``{z1, z2, y1, y2, v, s}`` (the filter's last two inputs and
outputs as in ``rtrl.cells.iir2``, the membrane, the last spikes; zero at start)::

    z  = x @ W + b  (+ s @ R with recurrent=True)                     the input current of rtrl.cells.spiking
    y  = z + b0*z1 + b1*z2 - a0*y1 - a1*y2                            the synaptic current: seed 001's IIR2 filter
    v' = leak * v + y - threshold * s                                 a LIF membrane (reset="subtract")
    s' = H(v' - threshold)                                            h = s'

and the other resets as ``LIF``'s (``reset="value"``: ``d = leak v + y``, ``s' = H(d - threshold)``,
``v' = d + s' (v_reset - d)``; ``reset="none"``).

Why the filter sits on the current and not on the membrane: the reset then acts on a first-order state, as in a
LIF neuron, and the filter stays linear, so (1) seed 001's stability triangle ``|a1| < 1, |a0| < 1 + a1`` and the
``"stable"`` parameterisation hold unchanged whatever the spikes do (a reset subtracted inside a second-order
membrane would feed back through ``a0, a1`` and could destabilise it); (2) the filter's closed-form traces are
seed 001's, unchanged, and the membrane adds one first-order trace on top; (3) it generalises the current-based
LIF (``CubaLIF`` of NIR, snntorch's ``Synaptic``: a first-order synapse, here ``a0 = -decay, a1 = b0 = b1 = 0``)
to a second-order, possibly resonant (band-pass) synapse, which is what ``rtrl.export`` maps to and from NIR.

Closed-form traces (no ``R``; derivation: docs/spiking.md). The filter keeps seed 001's traces ``F``
(``rtrl.cells.iir2``: ``dy/dtheta`` for every parameter, neuron-major); the membrane keeps ``LIF``'s ``ed``
(neuron-major too) with ``psi, gate, jump``, driven by the new filter trace ``F'.y1 = dy/dtheta``::

    ed'[theta] = leak dv[theta] + F'.y1[theta] - threshold ds[theta] [subtract]   (ds = psi ed, dv = gate ed + jump ds)
    dL/dtheta  = (filter's contraction of g_z1 .. g_y2) + g_v dv' + g_s ds'

Memory: three times the parameters plus two inputs and one ``(N,)`` vector.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp

from rtrl.cells.base import Params
from rtrl.cells.elementwise import neuron_major_to_params
from rtrl.cells.iir2 import CARRY, IIR2, check_parameterisation, filter_step, filter_trace_contract
from rtrl.cells.spiking import SpikingCell


class SpikingIIR2(SpikingCell):
    """``SpikingIIR2(input_size, hidden_size, parameterisation="seed", ...)`` with ``LIF``'s options;
    ``parameterisation`` as ``IIR2``'s (``"seed"``: ``a0, a1, b0, b1``; ``"stable"``: ``c_k1, c_k2, b0, b1``).
    See the module docstring."""

    parameterisation: str = "seed"
    neuron_major: ClassVar[bool] = True  # the filter's traces are neuron-major (rtrl.cells.iir2)

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
        if name in self.tau_shapes():
            return super().init_param(name, shape, key, dtype)
        return self.synapse.init_param(name, shape, key, dtype)

    def carry_sizes(self) -> dict[str, int]:
        return {**self.synapse.carry_sizes(), "v": self.hidden_size, "s": self.hidden_size, **self.refractory_carry()}

    def filter_params(self, params: Params) -> Params:
        return {name: params[name] for name in self.synapse.param_shapes()}

    def coefficients(self, params: Params, x: jax.Array | None = None) -> tuple[jax.Array, ...]:
        """The synaptic filter's ``(a0, a1, b0, b1)`` (``IIR2.coefficients``): what ``rtrl.cells.stability`` reads,
        so the stability triangle is checked on this cell as on an ``IIR2``."""
        return self.synapse.coefficients(self.filter_params(params), x)

    def membrane_step(self, params: Params, carry: Params, x: jax.Array) -> dict[str, jax.Array]:
        coefficients = self.coefficients(params)
        synapse = filter_step({name: carry[name] for name in CARRY}, self.current(params, carry, x), coefficients)
        v = carry["v"]
        return {**synapse, **self.integrate(self.leak_of(params, v) * v + synapse["y1"], carry,
                                            self.values("threshold", v))}

    # -- closed-form traces (one example; the library vmaps over the batch) ------------------------------
    def closed_form_init(self, params: Params, carry: Params) -> Params:
        synapse = self.synapse.trace_init(self.filter_params(params), carry)
        tau = {name: jnp.zeros(shape, carry["v"].dtype) for name, shape in self.tau_shapes().items()}
        return {"synapse": synapse, "v": {**jax.tree.map(jnp.zeros_like, synapse["y1"]), **tau},
                **self.zero_factors(carry)}

    def closed_form_update(self, params: Params, carry: Params, traces: Params, x: jax.Array) -> Params:
        synapse = self.synapse.trace_update(self.filter_params(params), carry, traces["synapse"], x)
        drive = {**synapse["y1"], **self.leak_drive(params, carry)}
        return {"synapse": synapse, "v": self.membrane_trace(params, traces, drive),
                **self.reset_factors(self.membrane_step(params, carry, x))}

    def closed_form_contract(self, params: Params, traces: Params, g_carry: Params) -> Params:
        grads = filter_trace_contract(traces["synapse"], {name: g_carry[name] for name in CARRY})
        membrane = self.membrane_contract(traces, g_carry)
        return neuron_major_to_params({name: grads[name] + g if name in grads else g for name, g in membrane.items()},
                                      ("W",))
