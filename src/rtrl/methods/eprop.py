"""e-prop / RFLO-style local eligibility traces (Bellec et al. 2020; Murray 2019), for any cell.

Exact RTRL propagates ``M' = J M + I`` with the full recurrence Jacobian ``J = d carry'/d carry``. The local
approximation keeps only its diagonal, each carry entry's dependence on its own previous value, and drops
every cross-entry (cross-neuron) term::

    M'[k, q] = J[k, k] M[k, q] + I[k, q]

So the traces live on the support of the immediate Jacobian ``I`` (SnAp-1's pattern) and never spread: the
influence of a parameter on carry entries it does not touch directly within a step is ignored, whatever path
(through other neurons, or another state component of the same neuron) carries it.

What this generic form keeps and the papers' forms do not: the self-recurrent path of an entry through the
cell's own recurrent weight (``d_k R_kk`` for ``Elman``), because a generic cell does not tell its hidden
state from its fed-back output. RFLO on a leaky RNN keeps only the leak; e-prop on an LSNN keeps the
membrane's own dynamics; both drop the recurrent-weight path. On cells where each parameter touches one carry
entry within a step (``Elman``) this method equals SnAp-1; it differs where a parameter touches several
(``GRU``'s reset gate, the layers above it in a ``Stack``, several state components of one neuron).
Cost: as SnAp-1.

**The cell's own e-prop.** A cell that writes Bellec et al.'s eligibility traces beside its equations
(``rtrl.capabilities.BellecEProp``: the spiking ``LIF`` and ``ALIF``, with or without recurrent weights) knows what
the generic form cannot: which carry entry is the neuron's hidden state and which its spikes, so the eligibility
vectors keep the neuron's own dynamics and drop every path through spikes (the reset's derivative too, as the paper
does; docs/spiking.md "e-prop"). ``eprop`` then binds to those hooks, and the rule contracts the **new** traces with
the credit on the new carry (``TraceRule.new_traces``): with a per-step loss on the spikes, the online gradient is
the paper's ``sum_t L^t e^t``, ``L^t = dE/dz^t``. Where the cell also keeps them factorised
(``rtrl.capabilities.FactoredEProp``: ``e_ji = psi_j zbar_i`` with one leak for all neurons), ``eprop`` binds to
that layout instead: the same gradient from presynaptic traces shared by the postsynaptic neurons (ALIF keeps its
adaptation's vector per synapse for its adapting neurons only). Every other cell keeps the generic form above.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from rtrl.capabilities import BellecEProp, FactoredEProp
from rtrl.methods.base import TraceMethod, TraceRule
from rtrl.methods.sensitivity import SnAp


class EProp(SnAp):
    """The cell's own e-prop where it has one (``BellecEProp``), else SnAp-1's sparse traces carried by the diagonal
    of the recurrence Jacobian only."""

    n: int = dataclasses.field(default=1, init=False, repr=False)

    @property
    def name(self) -> str:
        return "eprop"

    def propagation(self, j_carry):
        return jnp.diag(jnp.diagonal(j_carry))

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        if isinstance(cell, FactoredEProp):  # the same rule in the cell's smaller layout
            return TraceRule(self, cell.eprop_factored_init, cell.eprop_factored_update, cell.eprop_factored_contract,
                             new_traces=True, sums_batch=True)
        if isinstance(cell, BellecEProp):
            return TraceRule(self, cell.eprop_init, cell.eprop_update, cell.eprop_contract, new_traces=True)
        return super().bind(cell, params, carry)

    def trace_shapes(self, cell):
        if isinstance(cell, BellecEProp | FactoredEProp):  # no probe of the cell's Jacobians
            return TraceMethod.trace_shapes(self, cell)
        return super().trace_shapes(cell)
