"""A cell's optional capabilities, as typed protocols: what a method may ask of a cell beyond ``step``.

Cells and methods both import this module (it imports neither). A capability is present when the cell's class
defines the protocol's members, ``isinstance(cell, HasOutput)``; a cell that lacks one does not define its
members at all (no member that raises, no ``None`` to test for). Where an option decides a capability (the
spiking cells' ``recurrent``: closed-form traces exist without recurrent weights only), the class defines none
of its members and the cell itself gets them at construction (``rtrl.cells.spiking``).

* ``HasOutput``: ``output(params, carry_t, x_t) -> h_t``, for a cell whose ``h`` is a function of the new carry
  (its ``step`` returns exactly ``(carry_t, output(params, carry_t, x_t))``). Exact methods then contract the new
  traces and skip the backward pass through the recurrence (``rtrl.online``).
* ``HandDerivedTraces``: closed-form eligibility traces written beside the forward equations, for one example,
  with the meaning of a bound rule's functions (``rtrl.methods.TraceRule``): ``trace_init(params, carry)``,
  ``trace_update(params, carry, traces, x)``, ``trace_contract(params, traces, g_carry)`` and
  ``trace_to_params(params, grads)``. Every ``rtrl.cells.Cell`` has the last one (the identity: traces laid out
  like the parameters), so a cell opts in by writing the first three, and the fourth when its traces are laid
  out otherwise. The ``closed_form`` method uses them.
* ``ElementwiseRecurrence``: a cell that declares its step element-wise (``rtrl.cells.ElementwiseCell``): the input
  enters the carry only as ``u = x @ P`` for each of its ``projections()``, every other parameter that reaches the
  carry is a per-neuron vector (``vector_names()``, handed to ``recur`` by ``split_params(params)``),
  ``recur(vectors, carry, u)`` acts neuron by neuron, and ``output(params, carry, x)`` makes ``h``. The
  ``chunked`` method uses the declaration.
* ``BellecEProp``: a cell's own form of Bellec et al. (2020)'s e-prop eligibility traces (the spiking ``LIF`` and
  ``ALIF``), with the meaning of a bound rule's ``init``, ``update`` and ``contract`` and laid out like the
  parameters: ``eprop_init(params, carry)``, ``eprop_update(params, carry, traces, x)`` (the eligibility vectors of
  the new carry) and ``eprop_contract(params, traces, g_carry)`` (the eligibility traces times a credit on the
  new carry: with the credit on the spikes, the paper's ``L^t e^t``). The ``eprop`` method uses them.
* ``EPropOutput``: ``eprop_output(params, traces)``, the eligibility trace ``e = dh/dtheta`` of a ``BellecEProp``
  cell's vectors, each entry the sensitivity of the neuron its parameter's last axis names (the spiking cells): what a
  readout with a state filters (``rtrl.training.model.Filtered``).
* ``FactoredEProp``: ``eprop_factored_init / update / contract``, the same e-prop in a smaller layout of the cell's
  choosing (``LIF`` and ``ALIF`` with one leak and no reset to a value: ``e_ji = psi_j zbar_i``), the contraction
  summed over a batch at once; the ``eprop`` method prefers it where the cell has it.
* ``WindowEProp``: ``eprop_window(params, carries, new_carries, xs, g_carries, starts, later=None)``, the sum of a
  ``FactoredEProp`` cell's contractions over a window of steps whose traces start at zero (leading axes
  ``(T, *batch)``: the carry each step starts from, the one it makes, its input, the credit on the new carry, and
  where the traces are zeroed before a step, an episode's start), without traces: the filters move onto the
  credit, backwards in time (the spiking cells, ``Filtered`` and the trainer's ``ReadoutModel`` around them). It
  returns the gradient and the backward state at the window's first step, which the window before takes as
  ``later`` (so a window may be taken in pieces, last to first). The ``eprop_window`` method
  (``rtrl.methods.eprop.EPropWindow``) uses it. For a window that starts inside an episode, two more hooks:
  ``eprop_window_traces(params, carries, new_carries, xs, starts, ends, later=None)``, each example's part of the
  factorised traces after the window that these steps make (``ends``: the window's last step) and its backward
  state, and ``eprop_window_carried(params, traces, earlier, traces_earlier, sums)``, the boundary term (what the
  traces carried in owe the window's gradient) and the traces after the window.
* ``Spiking``: a cell whose ``h`` is its spikes (0 or 1), fired by ``fire(u)`` with a surrogate derivative
  (``rtrl.cells.LIF``, ``ALIF``, ``SpikingIIR2``); a trainer reports the firing rate of its held-out episodes.
* ``Layered``: a cell made of recurrent layers (``rtrl.cells.Stack``, ``rtrl.cells.Network``), which
  ``layer_local`` traces layer by layer: ``layers`` (the cells), ``layer_params(params)`` (each layer's
  parameters), ``layer_inputs(params, carry, x)`` (the input each layer reads at this step) and
  ``from_layer_grads(params, grads)`` (the layers' gradients as a gradient of ``params``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class HasOutput(Protocol):
    def output(self, params, carry, x) -> Any:
        """``h`` from the parameters, the new carry and the input."""


@runtime_checkable
class HandDerivedTraces(Protocol):
    def trace_init(self, params, carry) -> Any:
        """The traces of a carry that does not depend on the parameters (zeros)."""

    def trace_update(self, params, carry, traces, x) -> Any:
        """The traces of ``step(params, carry, x)``'s new carry."""

    def trace_contract(self, params, traces, g_carry) -> Any:
        """The gradient a credit on the carry amounts to, in the traces' layout."""

    def trace_to_params(self, params, grads) -> Any:
        """A sum of ``trace_contract`` laid out like ``params``."""


@runtime_checkable
class ElementwiseRecurrence(Protocol):
    def projections(self) -> Any:
        """Names of the ``(D, N)`` parameters that enter the recurrence only as ``x @ P``."""

    def vector_names(self) -> Any:
        """Names of the per-neuron ``(N,)`` parameters that ``recur`` receives."""

    def split_params(self, params) -> Any:
        """``(vectors, projections)``: the parameters the recurrence sees, by kind."""

    def recur(self, vectors, carry, u) -> Any:
        """The next carry, element-wise over neurons."""

    def output(self, params, carry, x) -> Any:
        """``h`` from the parameters, the new carry and the input."""


@runtime_checkable
class Spiking(Protocol):
    def fire(self, u) -> Any:
        """The spikes ``H(u)`` (0 or 1), differentiated through the cell's surrogate derivative."""


@runtime_checkable
class Layered(Protocol):
    layers: tuple

    def layer_params(self, params) -> tuple:
        """Each layer's parameters."""

    def layer_inputs(self, params, carry, x) -> tuple:
        """The input each layer reads at this step."""

    def from_layer_grads(self, params, grads: tuple) -> Any:
        """The layers' gradients as a gradient of all of ``params``."""


@runtime_checkable
class BellecEProp(Protocol):
    def eprop_init(self, params, carry) -> Any:
        """The eligibility vectors of a carry that does not depend on the parameters (zeros)."""

    def eprop_update(self, params, carry, traces, x) -> Any:
        """The eligibility vectors of ``step(params, carry, x)``'s new carry."""

    def eprop_contract(self, params, traces, g_carry) -> Any:
        """The eligibility traces times a credit on the carry the vectors describe, laid out like ``params``."""


@runtime_checkable
class EPropOutput(Protocol):
    def eprop_output(self, params, traces) -> Any:
        """The eligibility trace ``e = dh/dtheta`` as e-prop sees it, of the step the vectors describe, laid out like
        ``params``: each entry the sensitivity of the one neuron its parameter's last axis names."""


@runtime_checkable
class FactoredEProp(Protocol):
    """``BellecEProp`` in a smaller layout of the cell's choosing (the spiking cells where e-prop's eligibility vector
    is shared by the postsynaptic neurons): the same gradient, laid out like ``params``, from traces that are not.
    ``eprop_factored_contract`` sums over any leading axes of examples that its traces and credit share (one
    contraction for a whole batch). A cell with ``eprop_factored_output`` (``EPropOutput`` of these traces) can be read
    by a readout with a state (``rtrl.training.model.Filtered``, which then has these hooks too)."""

    def eprop_factored_init(self, params, carry) -> Any: ...

    def eprop_factored_update(self, params, carry, traces, x) -> Any: ...

    def eprop_factored_contract(self, params, traces, g_carry) -> Any: ...


@runtime_checkable
class WindowEProp(Protocol):
    """``FactoredEProp``'s contractions summed over a window of ``T`` steps from zero traces, in one call: the same
    gradient as the online rule's over the window, from per-neuron vectors (``rtrl.methods.eprop.EPropWindow``).
    ``carries`` are the carries the steps start from, ``new_carries`` the ones they make, ``xs`` their inputs,
    ``g_carries`` the credits on their new carries (a leaf ``None``: no credit), ``starts`` (``(T, *batch)`` bools)
    the steps before which the traces are zeroed (an episode's start; the window's first step starts from zero
    traces in any case), ``later`` the backward state that the window just after this one returned (``None``:
    none, the last window). The spiking cells also take ``filters``: credits on states that low-pass filter their
    spikes (a readout's, ``rtrl.training.model.Filtered``), taken in the same backward scan."""

    def eprop_window(self, params, carries, new_carries, xs, g_carries, starts, later=None) -> Any:
        """``(grads, earlier)``: the window's gradient, laid out like ``params``, summed over its steps and examples,
        and the backward state at its first step (the ``later`` of the window before)."""

    def eprop_window_traces(self, params, carries, new_carries, xs, starts, ends, later=None) -> Any:
        """``(sums, earlier)``: each example's part of the traces after the window that these steps make, and the
        backward state at their first step (the ``later`` of the steps before)."""

    def eprop_window_carried(self, params, traces, earlier, traces_earlier, sums) -> Any:
        """``(grads, traces)``: what the traces carried into the window owe its gradient (from ``eprop_window``'s
        ``earlier`` at its first step) and the traces after it (``eprop_window_traces``'s ``sums`` and ``earlier``
        there, with the carried traces' part), in the per-step rule's layout."""
