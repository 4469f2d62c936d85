"""``auto``: the cheapest exact online method for a cell, chosen from the cell itself.

In order: ``closed_form`` where the cell has hand-derived traces; ``diagonal`` where its step is element-wise
(found from the step alone, ``rtrl.structure.elementwise``: traces of parameter size times state order);
dense ``rtrl`` otherwise (exact for any cell). ``rtrl.inspect(cell)`` says which, and why.

For a whole sequence (``rtrl.sequence_grad``) there may be more than one exact path: ``sequence_candidates`` adds
``chunked`` where the cell declares an element-wise recurrence, and ``rtrl.sequence`` times the candidates on the
call's own shapes and keeps the faster (docs/methods.md, "auto"): which one wins depends on the cell, the sizes
and the device (docs/performance.md), so it is measured rather than ruled.
"""

from __future__ import annotations

from typing import ClassVar

from rtrl.methods import diagonal
from rtrl.methods.base import Method, TraceMethod, TraceRule, check_trace_dtype, trace_dtype_option
from rtrl.methods.chunked import Chunked
from rtrl.methods.closed_form import ClosedForm
from rtrl.methods.sensitivity import DenseRTRL
from rtrl.structure import Elementwise


class Auto(Method):
    """Resolved against a cell (``rtrl.methods.resolve(method, cell)``) to ``closed_form``, ``diagonal`` or ``rtrl``."""

    name: ClassVar[str] = "auto"
    online: ClassVar[bool] = True
    exact: ClassVar[bool] = True
    trace_dtype: str | None = trace_dtype_option()  # handed to the method chosen

    def __check_init__(self) -> None:
        object.__setattr__(self, "trace_dtype", check_trace_dtype(self.trace_dtype))  # canonical: "bfloat16"

    def choose(self, cell) -> TraceMethod:
        closed_form = ClosedForm(trace_dtype=self.trace_dtype)
        if closed_form.applies(cell):
            return closed_form
        if isinstance(diagonal.find(cell), Elementwise):
            return diagonal.Diagonal(trace_dtype=self.trace_dtype)
        return DenseRTRL(trace_dtype=self.trace_dtype)

    def sequence_candidates(self, cell) -> tuple[Method, ...]:
        """The exact methods for a whole sequence of ``cell``: the online choice, and ``chunked`` where it applies
        (not under a ``trace_dtype``, which ``chunked`` does not take)."""
        chunked = Chunked()
        extra = (chunked,) if self.trace_dtype is None and chunked.applies(cell) else ()
        return (self.choose(cell), *extra)

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        """The rule of the method chosen for ``cell`` (its ``method`` says which)."""
        return self.choose(cell).bind(cell, params, carry)

    def trace_shapes(self, cell):
        return self.choose(cell).trace_shapes(cell)
