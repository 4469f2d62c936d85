"""Hand-derived traces that a cell writes beside its forward equations.

A cell opts in by defining, for one example, ``trace_init(params, carry)``,
``trace_update(params, carry, traces, x)`` and ``trace_contract(params, traces, g_carry)`` with the meaning of
``TraceMethod.init / update / contract_traces``, and, when its traces are laid out unlike its parameters,
``trace_gradient(params, grads)`` with the meaning of ``TraceMethod.as_params`` (``ElementwiseCell`` keeps the
traces of projections neuron-major). Derivations live in docs/derivations.md; the tests hold each one to BPTT.
"""

from __future__ import annotations

from typing import ClassVar

from rtrl.methods.base import TraceMethod


class ClosedForm(TraceMethod):
    """The cell's own hand-derived traces (``trace_init / trace_update / trace_contract``)."""

    name: ClassVar[str] = "closed_form"
    exact: ClassVar[bool] = True

    def applies(self, cell) -> bool:
        return all(hasattr(cell, f) for f in ("trace_init", "trace_update", "trace_contract"))

    def check(self, cell) -> None:
        if not self.applies(cell):
            raise ValueError(
                f"method 'closed_form' needs hand-derived traces, and {cell.name} provides none; "
                "use 'diagonal' for an element-wise cell or 'rtrl' for any cell"
            )

    def init(self, cell, params, carry):
        return cell.trace_init(params, carry)

    def update(self, cell, params, carry, traces, x):
        return cell.trace_update(params, carry, traces, x)

    def contract_traces(self, cell, params, traces, g_carry):
        return cell.trace_contract(params, traces, g_carry)

    def as_params(self, cell, params, grads):
        return cell.trace_gradient(params, grads) if hasattr(cell, "trace_gradient") else grads
