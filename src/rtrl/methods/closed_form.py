"""Hand-derived traces that a cell writes beside its forward equations.

A cell opts in by defining, for one example, ``trace_init(params, carry)``, ``trace_update(params, carry,
traces, x)`` and ``trace_contract(params, traces, g_carry)`` with the meaning of a bound rule's ``init``,
``update`` and ``contract`` (``rtrl.methods.TraceRule``), and, when its traces are laid out unlike its parameters,
``trace_to_params(params, grads)`` with the meaning of its ``to_params`` (``ElementwiseCell`` keeps the traces of
projections neuron-major); together the protocol ``rtrl.capabilities.HandDerivedTraces``. Binding hands those
functions on as they are. Derivations live in docs/derivations.md; the tests hold each one to BPTT.
"""

from __future__ import annotations

from typing import ClassVar

from rtrl.capabilities import HandDerivedTraces
from rtrl.methods.base import TraceMethod, TraceRule


class ClosedForm(TraceMethod):
    """The cell's own hand-derived traces (``rtrl.capabilities.HandDerivedTraces``)."""

    name: ClassVar[str] = "closed_form"
    exact: ClassVar[bool] = True

    def two_steps_where_leaves_cross(self, cell) -> bool:
        """Always: LRU, RTU, LIF and ALIF (their carries' leaves read each other), whole-sequence gradient, quiet
        2-core CPU: 0.73x to 0.99x the time with one step per body at 32x64x8 and 64x256x32
        (docs/performance-history.md)."""
        return True

    def applies(self, cell) -> bool:
        return isinstance(cell, HandDerivedTraces)

    def check(self, cell) -> None:
        if not self.applies(cell):
            raise ValueError(
                f"method 'closed_form' needs hand-derived traces, and {cell.name} provides none; "
                "use 'diagonal' for an element-wise cell or 'rtrl' for any cell"
            )

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        self.check(cell)
        return TraceRule(self, cell.trace_init, cell.trace_update, cell.trace_contract, cell.trace_to_params)
