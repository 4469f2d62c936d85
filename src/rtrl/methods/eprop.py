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
gradient over the window is a sum that needs no per-synapse state. The method runs the window forward keeping the
carries, takes each step's credit on its new carry through ``output`` (one ``vjp`` for all the steps), and hands
carries, inputs and credits to the cell's ``eprop_window`` (``rtrl.capabilities.WindowEProp``), which moves the
traces' filters onto the credits (a backward scan of per-neuron vectors) and contracts them with the presynaptic
rows in one matrix product per parameter (docs/spiking.md, "e-prop over a window"). It does so in chunks of
``chunk`` steps, last to first, each run forward again from its first carry (kept by a first forward scan), the
backward state handed from chunk to chunk: memory is a chunk's carries, whatever the window's length (the whole
window at once, keeping every step's carries, was slower than ``bptt`` at the paper's scale; in chunks it is faster:
docs/performance.md, "e-prop over a window"). The gradient is the online rule's
exactly where the window's traces start at zero (tested against it); named as a method (``sequence_grad``), a window
that starts inside an episode starts from zero traces, as ``bptt`` over windows starts from a zero adjoint. Online
``eprop`` carries its traces on: ``carried_grad`` takes the traces before the window (the per-step rule's), adds
their boundary term (what they owe the window's contractions, from the backward state at its first step) and returns
the traces after it, each a backward scan of a unit credit at the window's last step (the cells'
``eprop_window_traces`` and ``eprop_window_carried``; docs/spiking.md, "The window's boundary term"): the per-step
rule's gradient and traces for any window (tested against it), which the trainer's ``CarriedWindow`` uses.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.capabilities import BellecEProp, FactoredEProp, HasOutput, WindowEProp
from rtrl.checks import check_positive_int
from rtrl.methods.base import SequenceMethod, TraceMethod, TraceRule
from rtrl.methods.sensitivity import SnAp
from rtrl.structure import unread_as_none


class EProp(SnAp):
    """The cell's own e-prop where it has one (``BellecEProp``), else SnAp-1's sparse traces carried by the diagonal
    of the recurrence Jacobian only. ``window`` (default on): where the model has e-prop over a window
    (``WindowEProp``) and an update closes more than one step, the trainer computes each window's gradient as
    ``EPropWindow`` does, the same gradient without per-step traces, from the traces carried in where the window
    starts inside an episode (``rtrl.training.windows.window_for``); ``window=False`` keeps the per-step traces."""

    n: int = dataclasses.field(default=1, init=False, repr=False)
    window: bool = True

    def __check_init__(self) -> None:
        if not isinstance(self.window, bool):
            raise TypeError(f"window must be True or False, got {self.window!r}")

    def over_windows(self, cell) -> SequenceMethod | None:
        """``EPropWindow`` where ``window`` is on, the traces are kept at full precision and ``cell`` has e-prop
        over a window (and an output); else ``None``."""
        if self.window and self.trace_dtype is None and EPropWindow.applies(cell):
            return EPropWindow()
        return None

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
    """Online e-prop's gradient over a window whose traces start at zero, without traces (see the module docstring):
    the window in chunks of ``chunk`` steps (default 50), last to first. A forward scan keeps the carry at each
    chunk's start only; each chunk is then run forward again keeping its carries, its steps' credits are taken
    through the cell's ``output`` and the cell's ``eprop_window`` turns them into the chunk's gradient, handing the
    backward state of the chunk's first step (its filtered credits) to the chunk before. Memory: ``chunk`` steps of
    carries, whatever the window's length."""

    chunk: int = 50
    name: ClassVar[str] = "eprop_window"

    def __check_init__(self) -> None:
        check_positive_int("chunk", self.chunk)

    @staticmethod
    def applies(cell) -> bool:
        return isinstance(cell, WindowEProp) and isinstance(cell, HasOutput)

    def check(self, cell) -> None:
        if not self.applies(cell):
            raise ValueError(f"method 'eprop_window' needs a cell with e-prop over a window (rtrl.capabilities."
                             f"WindowEProp and an output: LIF or ALIF with one leak, not learnt, and no reset to a "
                             f"value, or a readout around one), and {cell.name} has none; use 'eprop'")

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        return self.carried_grad(cell, params, xs, targets, loss_fn, carry)[:2]

    def carried_grad(self, cell, params, xs, targets, loss_fn, carry, traces=None, report=None):
        """``(loss, grads, traces, carry, reports)``: ``sequence_grad``'s, from the e-prop traces ``traces`` carried
        into the window (the per-step rule's factorised traces, each example's; ``None``: zero, and ``None``
        returned), with the traces and the carry after it, and ``report(h, target)`` of each step (``None``: none),
        from the outputs the gradient's pass computes. Each chunk also gives its part of the traces after the
        window (``eprop_window_traces``: a unit credit where the window ends, its backward state handed from chunk
        to chunk); the traces carried in add theirs, and their part of the window's gradient, at the end
        (``eprop_window_carried``)."""
        self.check(cell)
        steps = jnp.shape(xs)[0]
        size = min(self.chunk, steps)
        n, rest = divmod(steps, size)
        carried = traces is not None
        ends = jnp.zeros(xs.shape[:-1], bool).at[-1].set(True)  # the traces are read after the window's last step

        def advance(c, chunk_xs):
            return lax.scan(lambda c, x: (cell.step(params, c, x)[0], None), c, chunk_xs)[0]

        def chunk(start, chunk_xs, chunk_targets, chunk_ends, later):
            """``(loss, grads, earlier, sums, reports)`` of one chunk from the carry ``start``, ``later`` the backward
            states of the chunk after it (``None``: none, the window's last chunk), ``sums`` its part of the traces
            after the window (``None`` without ``traces``)."""
            _, after = lax.scan(lambda c, x: (cell.step(params, c, x)[0],) * 2, start, chunk_xs)
            before = jax.tree.map(lambda c0, c: jnp.concatenate([c0[None], c[:-1]]), start, after)

            def chunk_loss(p, after):
                hs = jax.vmap(cell.output, in_axes=(None, 0, 0))(p, after, chunk_xs)
                reports = None if report is None else jax.vmap(report)(hs, chunk_targets)
                return jnp.sum(jax.vmap(loss_fn)(hs, chunk_targets)), reports

            loss, pull, reports = jax.vjp(chunk_loss, params, after, has_aux=True)
            g_params, g_after = pull(jnp.ones_like(loss))
            unread = unread_as_none(lambda c: cell.output(params, c, chunk_xs[0]),
                                    jax.tree.map(lambda a: a[0], g_after))
            g_after = jax.tree.map(lambda read, g: None if read is None else g, unread, g_after,
                                   is_leaf=lambda a: a is None)
            starts = jnp.zeros(chunk_xs.shape[:-1], bool)  # no step restarts the traces but a reset (the cell's)
            later, later_traces = (None, None) if later is None else later
            grads, earlier = cell.eprop_window(params, before, after, chunk_xs, g_after, starts, later)
            sums, earlier_traces = (cell.eprop_window_traces(params, before, after, chunk_xs, starts, chunk_ends,
                                                             later_traces) if carried else (None, None))
            return loss, jax.tree.map(jnp.add, g_params, grads), (earlier, earlier_traces), sums, reports

        def whole(a):  # the first n * size steps as n chunks
            return a[: n * size].reshape((n, size) + a.shape[1:])

        full = (whole(xs), jax.tree.map(whole, targets), whole(ends))
        end, firsts = lax.scan(lambda c, chunk_xs: (advance(c, chunk_xs), c), carry, full[0])
        tail = None
        if rest:  # the last steps, fewer than a chunk
            rest_xs = xs[n * size:]
            last = chunk(end, rest_xs, jax.tree.map(lambda a: a[n * size:], targets), ends[n * size:], None)
            end, tail = advance(end, rest_xs), last[4]
        else:
            shapes = jax.eval_shape(lambda: chunk(carry, *jax.tree.map(lambda a: a[0], full), None))
            last = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), shapes)
        last = (last[0], last[1], last[3], last[2])  # the backward states last in the accumulator

        def back(acc, inputs):
            loss, grads, later, sums, reports = chunk(*inputs, acc[3])
            return (acc[0] + loss, *jax.tree.map(jnp.add, (acc[1], acc[2]), (grads, sums)), later), reports

        (loss, grads, sums, (first, first_traces)), reports = lax.scan(back, last, (firsts, *full), reverse=True)
        if report is not None:  # each step's, in order
            reports = jax.tree.map(lambda a: a.reshape((n * size,) + a.shape[2:]), reports)
            if tail is not None:
                reports = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), reports, tail)
        if carried:
            start, traces = cell.eprop_window_carried(params, traces, first, first_traces, sums)
            grads = jax.tree.map(jnp.add, grads, start)
        return loss, grads, traces, end, reports
