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
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from rtrl.methods.sensitivity import SnAp


class EProp(SnAp):
    """SnAp-1's sparse traces, carried by the diagonal of the recurrence Jacobian only."""

    n: int = dataclasses.field(default=1, init=False, repr=False)

    @property
    def name(self) -> str:
        return "eprop"

    def propagation(self, j_carry):
        return jnp.diag(jnp.diagonal(j_carry))
