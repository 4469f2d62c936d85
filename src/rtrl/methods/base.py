"""What a gradient method is.

Two kinds, both frozen dataclasses of their options (``rtrl.frozen.Frozen``: compared and hashed by value, so
compiled functions are cached per method):

* ``TraceMethod`` (online): carries eligibility traces forward with the carry. Its three pure functions act on
  **one example** (no batch dimensions; the library vmaps them over the batch):

  - ``init(cell, params, carry) -> traces``: traces of a carry that does not depend on the parameters (zeros);
  - ``update(cell, params, carry, traces, x) -> traces'``: the traces of ``carry' = step(params, carry, x)``;
  - ``contract_traces(cell, params, traces, g_carry) -> grads``: the parameter gradient that a credit
    ``g_carry`` on the carry the traces describe amounts to, in the traces' layout. A leaf of ``g_carry`` may be
    ``None``: no credit on that carry leaf (``rtrl.structure``'s policy), so its traces need not be read;
  - ``as_params(cell, params, grads)`` (default: as it is): such a gradient laid out like ``params``, for a
    method whose traces are laid out otherwise (the element-wise methods keep them neuron-major).

  ``contract = as_params o contract_traces`` is the gradient (a pytree like ``params``). The online step sums
  ``contract_traces`` over the examples of a batch, streaming in the traces' own layout, and lays the sum out once.

  Their use (``rtrl.online``) back-propagates a step's loss through that one step only, to the parameters
  (immediate part) and to a carry, whose credit the traces turn into the rest.

  Every trace method has the option ``trace_dtype`` (keyword only): the dtype the traces are **stored** in
  between steps, ``None`` (default) for the dtype of the parameters and carry. ``"bfloat16"`` or ``"float16"``
  halve the traces' memory and traffic; the update and the contraction still compute in the parameters' dtype
  (the stored traces are widened when read and rounded to nearest when written, by ``rtrl.online``), so the
  rounding error is one per step and does not compound within a step. Not exact: the gradient's fidelity is
  measured in docs/methods.md.

* ``SequenceMethod``: needs the whole sequence (``bptt``, ``tbptt``); only ``sequence_grad`` applies.

Every method has ``check(cell)``, which raises ``ValueError`` saying why the method does not apply to a cell.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax.numpy as jnp

from rtrl.frozen import Frozen

TRACE_DTYPES = ("bfloat16", "float16", "float32", "float64")


def check_trace_dtype(value) -> str | None:
    """The name of a storage dtype for traces (``None``: the parameters' dtype); ``ValueError`` otherwise."""
    if value is None:
        return None
    try:
        name = jnp.dtype(value).name
    except TypeError:
        name = None
    if name not in TRACE_DTYPES:
        raise ValueError(f"trace_dtype must be one of {list(TRACE_DTYPES)} or None (the parameters' dtype), "
                         f"got {value!r}")
    return name


def trace_dtype_option():
    """The ``trace_dtype`` field of a method (keyword only, so that positional options keep their places)."""
    return dataclasses.field(default=None, kw_only=True)


class Method(Frozen):
    name: ClassVar[str] = "method"
    online: ClassVar[bool] = False
    exact: ClassVar[bool] = False

    def check(self, cell) -> None:
        """Raise ``ValueError`` when this method does not apply to ``cell``."""


class TraceMethod(Method):
    online: ClassVar[bool] = True
    trace_dtype: str | None = trace_dtype_option()

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "trace_dtype", check_trace_dtype(self.trace_dtype))

    def init(self, cell, params, carry) -> Any:
        raise NotImplementedError

    def update(self, cell, params, carry, traces, x) -> Any:
        raise NotImplementedError

    def contract_traces(self, cell, params, traces, g_carry) -> Any:
        """The gradient a credit on the carry amounts to, in the traces' layout (what the online step sums)."""
        raise NotImplementedError

    def as_params(self, cell, params, grads) -> Any:
        """A sum of ``contract_traces`` laid out like ``params``."""
        return grads

    def contract(self, cell, params, traces, g_carry) -> Any:
        """The gradient a credit ``g_carry`` on the carry amounts to, laid out like ``params``."""
        return self.as_params(cell, params, self.contract_traces(cell, params, traces, g_carry))


class SequenceMethod(Method):
    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        """``(loss, grads)`` of ``sum_t loss_fn(h_t, targets[t])`` over ``xs`` from ``carry``."""
        raise NotImplementedError
