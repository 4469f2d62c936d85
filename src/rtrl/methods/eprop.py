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

**e-prop over a window** (``EPropWindow``, a sequence method): where the update closes a window whose traces start
at zero (the trainer's ``update_every`` = the episode, every window starting at an episode's start), online e-prop's
gradient over the window is a sum that needs no per-synapse state. The method runs the window forward once keeping
the carries, takes each step's credit on its new carry through ``output`` (one ``vjp`` for the whole window), and
hands carries, inputs and credits to the cell's ``eprop_window`` (``rtrl.capabilities.WindowEProp``), which moves
the traces' filters onto the credits (backward scans of per-neuron vectors) and contracts them with the presynaptic
rows in one matrix product per parameter (docs/spiking.md, "e-prop over a window"). The gradient is the online rule's
exactly where the window's traces start at zero (tested against it); a window that starts inside an episode starts
from zero traces here, as ``bptt`` over windows starts from a zero adjoint (online e-prop would carry them on).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.capabilities import BellecEProp, FactoredEProp, HasOutput, WindowEProp
from rtrl.methods.base import SequenceMethod, TraceMethod, TraceRule
from rtrl.methods.sensitivity import SnAp
from rtrl.structure import unread_as_none


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


class EPropWindow(SequenceMethod):
    """Online e-prop's gradient over a window whose traces start at zero, without traces: a forward scan, each step's
    credit through the cell's ``output``, and the cell's ``eprop_window`` (see the module docstring)."""

    name: ClassVar[str] = "eprop_window"

    def check(self, cell) -> None:
        if not (isinstance(cell, WindowEProp) and isinstance(cell, HasOutput)):
            raise ValueError(f"method 'eprop_window' needs a cell with e-prop over a window (rtrl.capabilities."
                             f"WindowEProp and an output: LIF or ALIF with one leak, not learnt, and no reset to a "
                             f"value, or a readout around one), and {cell.name} has none; use 'eprop'")

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        self.check(cell)
        _, after = lax.scan(lambda c, x: (cell.step(params, c, x)[0],) * 2, carry, xs)
        before = jax.tree.map(lambda c0, c: jnp.concatenate([c0[None], c[:-1]]), carry, after)

        def window_loss(p, after):
            hs = jax.vmap(cell.output, in_axes=(None, 0, 0))(p, after, xs)
            return jnp.sum(jax.vmap(loss_fn)(hs, targets))

        loss, pull = jax.vjp(window_loss, params, after)
        g_params, g_after = pull(jnp.ones_like(loss))
        unread = unread_as_none(lambda c: cell.output(params, c, xs[0]), jax.tree.map(lambda a: a[0], g_after))
        g_after = jax.tree.map(lambda read, g: None if read is None else g, unread, g_after,
                               is_leaf=lambda a: a is None)
        starts = jnp.zeros(xs.shape[:-1], bool)  # the window's traces start at zero: no step restarts them
        grads = cell.eprop_window(params, before, after, xs, g_after, starts)
        return loss, jax.tree.map(jnp.add, g_params, grads)
