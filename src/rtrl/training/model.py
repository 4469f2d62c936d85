"""A cell with a readout and per-example resets, seen as a single cell; the readout's own state and the firing-rate
regulariser of the e-prop paper.

Parameters are ``{"cell": <the cell's>, "readout": {"W": (N, O), "b": (O,)}}``. The input is the cell's input
with one more channel, a reset flag: where it is 1 the carry is zeroed before the step (an episode boundary). So
a sequence method (BPTT, truncated BPTT) run over this model differentiates the readout too, and stops at
episode boundaries inside a window, exactly as the online learner's ``reset`` does::

    carry = 0 where reset;   carry', h = cell.step(params["cell"], carry, x);   y = h @ W + b

**The e-prop paper's readout** (Bellec et al. 2020; the official code's ``exp_convolve`` and ``reg_f``), a
``Readout`` with ``decay`` kappa > 0 or ``rate_weight`` c > 0: the readout reads the cell's output low-pass
filtered, ``o_t = kappa o_{t-1} + (1 - kappa) h_t`` (``kappa = exp(-dt / tau_out)``, ``o_0 = 0`` at each episode's
start), ``y_t = o_t @ W + b``, and the objective gains the firing-rate regulariser of each episode of ``T`` steps::

    L_reg = c sum_j (n_T,j / T - f)^2        n_t = h_1 + ... + h_t,  f = rate_target (spikes per step)

A readout with a state is recurrent: its state joins the cell's carry (``Filtered``: ``o`` and the count ``n``), so
an exact method's traces cover it and every exact method still equals BPTT. ``L_reg`` is paid as it accrues, one
telescoping term per step, ``c sum_j [(n_t,j / T - f)^2 - (n_{t-1},j / T - f)^2]``, a function of ``n_t`` and
``h_t = n_t - n_{t-1}`` alone: over an episode the terms sum to ``L_reg - c N f^2`` (a constant), so the gradient
of the whole episode is ``L_reg``'s, online, at every update interval. Derivation: docs/spiking.md ("The e-prop
paper's readout").

**The batch-mean rate** (``rate_form="batch"``, the official code's ``reg_f``): the regulariser squares the
streams' mean rate, ``L_reg = c sum_j (mean_b n_T,b,j / T - f)^2``, where ``"trial"`` (the default) averages the
streams' own squares ``mean_b c sum_j (n_T,b,j / T - f)^2``: the trial form also pays ``c sum_j Var_b(n_T,b,j / T)``.
The streams of one update step together and share it: each step's term is the same telescoping term of the
streams' mean counts ``nbar_t = mean_b n_t,b`` (``rate_counts``), carried by every stream's output, so the
objective's mean over the streams counts it once. Its gradient reaches each stream through its own count: the
credit on stream b's ``n_t`` is ``2c / (B T) (nbar_t / T - f)`` and on its ``n_t - s_t`` ``-2c / (B T) (nbar_{t-1} / T
- f)``, the trial form's with the batch's rate in place of the stream's own, contracted with stream b's traces of
``n``; over an episode they sum to ``2c / (B T) sum_b sum_j (nbar_T,j / T - f) dn_T,b,j / dtheta``, ``L_reg``'s
gradient. The streams' episodes must start together (no ``stagger``: ``Readout.check_streams``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from rtrl.capabilities import BellecEProp, EPropOutput, FactoredEProp, HasOutput, WindowEProp
from rtrl.cells.base import Cell, Params, glorot
from rtrl.cells.spiking import check_number
from rtrl.config import OptionError, checked, one_of
from rtrl.frozen import Frozen
from rtrl.online import contract_summed, zero_where

RATE_FORMS = ("trial", "batch")  # the regulariser squares each stream's rate, or the streams' mean rate


def init_readout(key: jax.Array, hidden_size: int, output_size: int, dtype) -> Params:
    return {"W": glorot(key, (hidden_size, output_size), dtype), "b": jnp.zeros((output_size,), dtype)}


def readout(params: Params, h: jax.Array) -> jax.Array:
    return h @ params["W"] + params["b"]


class Filtered(Cell):
    """``Filtered.of(cell, decay)``: ``cell`` with the readout's state in its carry, ``{"cell": c, "o": N, "n": N}``::

        c', s = cell.step(params, c, x);   o' = decay o + (1 - decay) s;   n' = n + s;   h = [o', s, n']  (3N)

    Its parameters are the cell's. Where the cell has ``output`` (``rtrl.capabilities.HasOutput``) so has this one,
    and where the cell has its own e-prop (``BellecEProp`` with ``EPropOutput``) so has this one: the cell's
    eligibility vectors and two more traces of the cell's eligibility trace ``e = dh/dtheta`` (``eprop_output``),
    filtered as ``o`` and summed as ``n`` (the paper's filtered eligibility trace,
    ``e_bar' = decay e_bar + (1 - decay) e'``). Dense ``rtrl``
    and ``diagonal`` see the wrapped step as any other; ``closed_form`` does not apply (no hand-derived traces)."""

    cell: Cell = None
    decay: float = 0.0

    @classmethod
    def of(cls, cell: Cell, decay: float = 0.0) -> Filtered:
        return cls(cell.input_size, 3 * cell.hidden_size, cell, decay)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.cell, Cell):
            raise TypeError(f"cell must be an rtrl cell, got {type(self.cell).__name__}")
        object.__setattr__(self, "decay", check_number("decay", self.decay, 0.0, 1.0, open_low=False))
        if isinstance(self.cell, HasOutput):
            object.__setattr__(self, "output", self.filtered_output)
        if isinstance(self.cell, BellecEProp) and isinstance(self.cell, EPropOutput):
            for name in ("init", "update", "contract"):
                object.__setattr__(self, "eprop_" + name, getattr(self, "filtered_eprop_" + name))
                if isinstance(self.cell, FactoredEProp):  # the same over the cell's factorised traces
                    object.__setattr__(self, "eprop_factored_" + name,
                                       functools.partial(getattr(self, "filtered_eprop_" + name), factored=True))
        if isinstance(self.cell, WindowEProp):
            for name in ("window", "window_traces", "window_carried"):
                object.__setattr__(self, "eprop_" + name, getattr(self, "filtered_eprop_" + name))

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return self.cell.param_shapes()

    def init(self, key: jax.Array, dtype=None) -> Params:
        return self.cell.init(key, dtype)

    def initial_carry(self, batch_shape=(), dtype=None):
        inner = self.cell.initial_carry(batch_shape, dtype)
        zeros = jnp.zeros_like(jax.tree.leaves(inner)[0], shape=jnp.shape(jax.tree.leaves(inner)[0])[:-1]
                               + (self.cell.hidden_size,))
        return {"cell": inner, "o": zeros, "n": zeros}

    def step(self, params: Params, carry, x: jax.Array):
        self.check_input(x)
        self.check_carry(carry, ("cell", "o", "n"))
        inner, s = self.cell.step(params, carry["cell"], x)
        carry = {"cell": inner, "o": self.decay * carry["o"] + (1 - self.decay) * s, "n": carry["n"] + s}
        return carry, jnp.concatenate([carry["o"], s, carry["n"]], axis=-1)

    def filtered_output(self, params: Params, carry, x: jax.Array) -> jax.Array:
        s = self.cell.output(params, carry["cell"], x)
        return jnp.concatenate([carry["o"], s, carry["n"]], axis=-1)

    # -- e-prop: the cell's eligibility traces, and its eligibility trace filtered and summed ------------------
    # ``factored=True``: over the cell's factorised traces (``rtrl.capabilities.FactoredEProp``), the filtered and
    # summed eligibility traces still per synapse, the contraction summed over any leading axes of examples.
    def inner_eprop(self, name: str, factored: bool):
        """The cell's e-prop hook ``name``, in its factorised layout with ``factored``."""
        return getattr(self.cell, ("eprop_factored_" if factored else "eprop_") + name)

    def filtered_eprop_init(self, params: Params, carry, factored: bool = False) -> Params:
        inner = self.inner_eprop("init", factored)(params, carry["cell"])
        zeros = {name: jnp.zeros(jnp.shape(p), carry["o"].dtype) for name, p in params.items()}
        return {"cell": inner, "o": zeros, "n": zeros}

    def filtered_eprop_update(self, params: Params, carry, traces: Params, x: jax.Array,
                              factored: bool = False) -> Params:
        inner = self.inner_eprop("update", factored)(params, carry["cell"], traces["cell"], x)
        e = self.inner_eprop("output", factored)(params, inner)
        return {"cell": inner,
                "o": {name: self.decay * traces["o"][name] + (1 - self.decay) * e[name] for name in e},
                "n": {name: traces["n"][name] + e[name] for name in e}}

    def filtered_eprop_contract(self, params: Params, traces: Params, g_carry, factored: bool = False) -> Params:
        """The cell's part, and ``g_o e_bar + g_n sum(e)``: each credit on a neuron times the traces of the entries
        whose last axis names that neuron (the layout of ``eprop_output``), summed over any leading axes of
        examples."""
        grads = self.inner_eprop("contract", factored)(params, traces["cell"], g_carry["cell"])
        read = [k for k in ("o", "n") if g_carry[k] is not None]
        if not read:
            return grads

        def example(tr, g):  # one example's: each credit on a neuron times its column of the traces
            return {name: sum(g[k] * tr[k][name] for k in read) for name in grads}

        # a loop over the examples: on a CPU, XLA's sum of the products over a batch axis is several times slower
        batch_ndim = jnp.ndim(g_carry[read[0]]) - 1
        filtered = contract_summed(example, {k: traces[k] for k in read}, {k: g_carry[k] for k in read}, batch_ndim)
        return jax.tree.map(jnp.add, grads, filtered)

    def filtered_eprop_window(self, params: Params, carries, new_carries, xs: jax.Array, g_carries,
                              starts: jax.Array, later=None):
        """``rtrl.capabilities.WindowEProp``: ``g_o e_bar + g_n sum(e)`` summed over the window is ``e`` times the
        credits on ``o`` and ``n`` filtered backwards, ``(1 - decay) G_o^t + G_n^t``, ``G_o^t = g_o^t + decay
        G_o^(t+1)``, ``G_n^t = g_n^t + G_n^(t+1)`` (cut where step t+1 starts an episode): the cell's window takes
        them as filters of its spikes (``o' = decay o + (1 - decay) s'``, ``n' = n + s'``), in its own backward
        scan (``e`` contracts as a credit on the spikes: ``eprop_output``)."""
        filters = tuple((g_carries[k], decay, weight) for k, (decay, weight) in self.filters().items())
        return self.cell.eprop_window(params, carries["cell"], new_carries["cell"], xs, g_carries["cell"], starts,
                                      later, filters=filters)

    def filters(self) -> dict[str, tuple[float, float]]:
        """``(decay, weight)`` of each state that filters the spikes, ``o' = decay o + weight s'``: ``o`` and ``n``."""
        return {"o": (self.decay, 1 - self.decay), "n": (1.0, 1.0)}

    def filtered_eprop_window_traces(self, params: Params, carries, new_carries, xs: jax.Array, starts: jax.Array,
                                     ends: jax.Array, later=None):
        """``rtrl.capabilities.WindowEProp``: the cell's, its filtered traces ``o`` and ``n`` among them."""
        return self.cell.window_traces(params, carries["cell"], new_carries["cell"], xs, starts, ends, later,
                                       filters=tuple(self.filters().values()))

    def filtered_eprop_window_carried(self, params: Params, traces: Params, earlier, traces_earlier, sums: Params):
        """``rtrl.capabilities.WindowEProp``: the cell's, and what the filtered traces ``F0`` carried into the window
        (``o`` and ``n``) owe its contractions, ``decay <G^(t0), F0>`` summed over the examples, ``G^(t0)`` the
        filtered credit at its first step (in ``earlier``)."""
        filters = tuple((decay, weight, traces[k]) for k, (decay, weight) in self.filters().items())
        grads, inner, filtered = self.cell.window_carried(params, traces["cell"], earlier, traces_earlier, sums,
                                                          filters=filters)
        for (decay, _, F0), G in zip(filters, earlier[2], strict=True):
            grads = {name: g + decay * jnp.einsum("...ij,...j->ij" if jnp.ndim(g) == 2 else "...j,...j->j",
                                                   F0[name], G) for name, g in grads.items()}
        return grads, {"cell": inner, **dict(zip(self.filters(), filtered, strict=True))}


class Readout(Frozen):
    """How the trainer reads its cell (see the module docstring): ``decay`` in [0, 1) (0: the output as it is),
    ``rate_weight`` c >= 0 (0: no regulariser), ``rate_target`` f in [0, 1] (spikes per step: 10 Hz at 1 ms is
    0.01), ``trial`` T, the episode's length, ``rate_form`` one of ``RATE_FORMS`` (``rate_counts``). ``stateful``
    when the filter or the regulariser is on: the learned cell is then ``Filtered``."""

    decay: float = 0.0
    rate_weight: float = 0.0
    rate_target: float = 0.01
    trial: int = 1
    rate_form: str = "trial"

    def __post_init__(self) -> None:
        for name, low, high, closed_high in (("decay", 0.0, 1.0, False), ("rate_weight", 0.0, float("inf"), False),
                                             ("rate_target", 0.0, 1.0, True)):
            object.__setattr__(self, name, check_number(name, getattr(self, name), low, high, open_low=False,
                                                        open_high=not closed_high))
        checked("rate_form", one_of(RATE_FORMS), self.rate_form)

    @property
    def batch_rate(self) -> bool:
        """Whether the regulariser squares the streams' mean rate (``rate_form="batch"``, with a regulariser)."""
        return self.rate_form == "batch" and self.rate_weight > 0

    def check_streams(self, stagger: bool) -> None:
        """``OptionError`` naming ``rate_form`` where the batch's rate would mix streams whose episodes start at
        different steps (``stagger``): its per-step terms then no longer sum to a penalty of whole episodes."""
        if stagger and self.batch_rate:
            raise OptionError("rate_form 'batch' squares the streams' mean rate over episodes that start together; "
                              "stagger starts them at different steps (use rate_form 'trial', or no stagger)",
                              "rate_form")

    @property
    def stateful(self) -> bool:
        return self.decay > 0 or self.rate_weight > 0

    @property
    def extra(self) -> int:
        """Outputs beyond the task's: one, the regulariser's term of the step, where there is one."""
        return int(self.rate_weight > 0)

    def learned(self, cell: Cell) -> Cell:
        """The cell the methods learn: ``cell``, or ``Filtered`` around it."""
        return Filtered.of(cell, self.decay) if self.stateful else cell

    def __call__(self, params: Params, h: jax.Array) -> jax.Array:
        """The outputs of ``h`` (the learned cell's): the task's, then the regulariser's term (``extra``)."""
        if not self.stateful:
            return readout(params, h)
        o, s, n = jnp.split(h, 3, axis=-1)
        y = readout(params, o)
        if not self.extra:
            return y
        now, before = (count / self.trial - self.rate_target for count in rate_counts(n, s, self.rate_form))
        term = self.rate_weight * jnp.sum(now**2 - before**2, axis=-1, keepdims=True)
        return jnp.concatenate([y, jnp.broadcast_to(term, y.shape[:-1] + (1,))], axis=-1)


PLAIN = Readout()  # the output as it is, no regulariser


def rate_counts(n: jax.Array, s: jax.Array, rate_form: str) -> tuple[jax.Array, jax.Array]:
    """The spike counts the regulariser's term of a step squares (``n / T`` is the rate so far), after the step and
    before it (``n - s``): each stream's own (``"trial"``), or, for ``"batch"``, their mean over every leading axis
    of ``n`` (the streams of the step, so every stream gets the batch's term), the e-prop paper's batch-mean rate."""
    counts = (n, n - s)
    if rate_form == "trial":
        return counts
    return tuple(jnp.mean(c, axis=tuple(range(jnp.ndim(c) - 1)), keepdims=True) for c in counts)


class ReadoutModel(Cell):
    """``ReadoutModel.of(cell, output_size, readout=Readout())``: input size ``cell.input_size + 1``, output size
    ``output_size`` plus ``readout.extra``; ``cell`` is the learned cell (``readout.learned``)."""

    cell: Cell = None
    readout: Readout = PLAIN

    @classmethod
    def of(cls, cell: Cell, output_size: int, readout: Readout = PLAIN) -> ReadoutModel:
        return cls(cell.input_size + 1, output_size + readout.extra, cell, readout)

    @property
    def read_size(self) -> int:
        """The size of what the readout's ``W`` reads: the cell's output, or the filtered one (a third of it)."""
        return self.cell.hidden_size // 3 if self.readout.stateful else self.cell.hidden_size

    def init(self, key: jax.Array, dtype=None) -> Params:
        dtype = dtype or jnp.zeros(()).dtype
        k_cell, k_out = jax.random.split(key)
        return {
            "cell": self.cell.init(k_cell, dtype),
            "readout": init_readout(k_out, self.read_size, self.hidden_size - self.readout.extra, dtype),
        }

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.cell, WindowEProp) and isinstance(self.cell, HasOutput):
            object.__setattr__(self, "output", self.read_output)
            for name in ("window", "window_traces", "window_carried"):
                object.__setattr__(self, "eprop_" + name, getattr(self, "readout_eprop_" + name))

    def initial_carry(self, batch_shape=(), dtype=None):
        return self.cell.initial_carry(batch_shape, dtype)

    def read_output(self, params: Params, carry, x: jax.Array) -> jax.Array:
        """The outputs of the new carry (``rtrl.capabilities.HasOutput``, where the cell has e-prop over a window)."""
        return self.readout(params["readout"], self.cell.output(params["cell"], carry, x[..., :-1]))

    def readout_eprop_window(self, params: Params, carries, new_carries, xs: jax.Array, g_carries,
                             starts: jax.Array, later=None):
        """``rtrl.capabilities.WindowEProp``: the cell's, the carry each step starts from zeroed where the reset flag
        is set (an episode's start, as ``step``), the readout's part none (it comes through ``output``)."""
        reset = xs[..., -1] > 0.5
        grads, earlier = self.cell.eprop_window(params["cell"], zero_where(reset, carries), new_carries,
                                                xs[..., :-1], g_carries, starts | reset, later)
        return {"cell": grads, "readout": jax.tree.map(jnp.zeros_like, params["readout"])}, earlier

    def readout_eprop_window_traces(self, params: Params, carries, new_carries, xs: jax.Array, starts: jax.Array,
                                    ends: jax.Array, later=None):
        """``rtrl.capabilities.WindowEProp``: the cell's, the carries zeroed and the traces cut where the reset flag
        is set (as ``readout_eprop_window``)."""
        reset = xs[..., -1] > 0.5
        return self.cell.eprop_window_traces(params["cell"], zero_where(reset, carries), new_carries, xs[..., :-1],
                                             starts | reset, ends, later)

    def readout_eprop_window_carried(self, params: Params, traces: Params, earlier, traces_earlier, sums: Params):
        """``rtrl.capabilities.WindowEProp``: the cell's (an episode's start at the window's first step has cut the
        backward states already), the readout's part none."""
        grads, traces = self.cell.eprop_window_carried(params["cell"], traces, earlier, traces_earlier, sums)
        return {"cell": grads, "readout": jax.tree.map(jnp.zeros_like, params["readout"])}, traces

    def step(self, params: Params, carry, x: jax.Array):
        self.check_input(x)
        carry = zero_where(x[..., -1] > 0.5, carry)
        carry, h = self.cell.step(params["cell"], carry, x[..., :-1])
        return carry, self.readout(params["readout"], h)


def with_reset_flag(xs: jax.Array, done: jax.Array) -> jax.Array:
    """Append the reset channel that ``ReadoutModel`` reads."""
    return jnp.concatenate([xs, done[..., None].astype(xs.dtype)], axis=-1)
