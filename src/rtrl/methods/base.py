"""What a gradient method is, and what binding one to a cell gives.

A method object holds its **options** only: a frozen dataclass (``rtrl.frozen.Frozen``: compared and hashed by
value, so compiled functions are cached per method; ``rtrl.methods.SnAp(n=2)``), checked in ``__check_init__``
(every level of a subclass runs its bases' checks). Two kinds:

* ``TraceMethod`` (online) **binds** to a cell once, in the manner of optax's ``init``/``update`` pairs:
  ``rule = method.bind(cell)`` finds what the method needs to know about the cell's step, once (``diagonal``:
  the element-wise structure; ``snap1``: the sparsity pattern; ``closed_form``: the cell's hand-derived traces;
  ``layer_local``: a bound rule per layer), and returns a ``TraceRule``: pure functions of **one example** (no
  batch dimensions; ``rtrl.online`` vmaps them over the batch) that close over what was found:

  - ``init(params, carry) -> traces``: the traces of a carry that does not depend on the parameters (zeros);
  - ``update(params, carry, traces, x) -> traces'``: the traces of ``carry' = step(params, carry, x)``;
  - ``contract(params, traces, g_carry) -> grads``: the parameter gradient that a credit ``g_carry`` on the carry
    the traces describe amounts to, **in the traces' layout**. A leaf of ``g_carry`` may be ``None``: no credit
    on that carry leaf (``rtrl.structure``'s policy), so its traces need not be read;
  - ``to_params(params, grads) -> grads``: a sum of such gradients laid out like ``params`` (default: as it
    is), for a rule whose traces are laid out otherwise (the element-wise ones keep them neuron-major). The
    online step sums ``contract`` over the examples of a batch in the traces' own layout and lays the sum out
    once.

  and ``method``, ``exact``, ``trace_dtype``, ``contracts_new_traces`` (which traces the online step contracts:
  ``new_traces``, by default the new ones where the method is exact), ``sums_batch`` (``contract`` also takes the
  traces and credit of a whole batch, leading axes, and returns the sum over it: one call a step, e.g. a matrix
  product over the batch, instead of one per example). A method that does not apply to the cell
  raises ``ValueError`` from ``bind`` (and from ``check(cell)``), saying why. The rule's use (``rtrl.online``)
  back-propagates a step's loss through that one step only, to the parameters (immediate part) and to a carry,
  whose credit the traces turn into the rest. ``trace_shapes(cell)`` says what ``init`` makes (``None`` where
  finding out would cost a probe of the cell: SnAp on a large cell).

  Every trace method has the option ``trace_dtype`` (keyword only): the dtype the traces are **stored** in
  between steps, ``None`` (default) for the dtype of the parameters and carry. ``"bfloat16"`` or ``"float16"``
  halve the traces' memory and traffic; the update and the contraction still compute in the parameters' dtype
  (the stored traces are widened when read and rounded to nearest when written, by ``rtrl.online``), so the
  rounding error is one per step and does not compound within a step. Not exact: the gradient's fidelity is
  measured in docs/methods.md.

* ``SequenceMethod``: needs the whole sequence (``bptt``, ``tbptt``); only ``sequence_grad`` applies.

Every method has ``check(cell)``, which raises ``ValueError`` saying why the method does not apply to a cell.
docs/methods.md says what a new approximation implements.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from rtrl.checks import default_dtype
from rtrl.frozen import Frozen
from rtrl.validate import check_cell, describe, expected_params, same_tree

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
    if name == "float64" and not jax.config.jax_enable_x64:  # JAX would store float32 without a word
        raise ValueError("trace_dtype 'float64' needs JAX's 64-bit mode, which is off (without it the traces would "
                         "be stored as float32): jax.config.update('jax_enable_x64', True) first")
    return name


def trace_dtype_option():
    """The ``trace_dtype`` field of a method (keyword only, so that positional options keep their places)."""
    return dataclasses.field(default=None, kw_only=True)


def example_shapes(cell, params=None, carry=None) -> tuple[Any, Any]:
    """One example's parameters and carry as the method binds to them: those given (arrays or shapes), else the
    shapes of ``cell.init``'s and ``cell.initial_carry(())``'s (what ``rtrl.online`` checks parameters against),
    worked out without making an array (so binding does not start JAX's backend: the CLI checks it first)."""
    if params is None:
        params = jax.eval_shape(lambda: cell.init(jax.random.PRNGKey(0)))
    if carry is None:
        carry = jax.eval_shape(lambda: cell.initial_carry(()))
    return params, carry


def laid_out_as_is(params, grads) -> Any:
    """``TraceRule.to_params`` of traces laid out like the parameters."""
    return grads


class TraceRule(NamedTuple):
    """A trace method bound to a cell: pure functions of one example (see the module docstring)."""

    method: Any  # the TraceMethod bound (its options)
    init: Callable  # (params, carry) -> traces
    update: Callable  # (params, carry, traces, x) -> traces
    contract: Callable  # (params, traces, g_carry) -> grads in the traces' layout
    to_params: Callable = laid_out_as_is  # (params, grads) -> grads laid out like params
    new_traces: bool | None = None  # which traces the online step contracts; None: the new ones where exact
    sums_batch: bool = False  # whether contract takes a whole batch (leading axes) and returns its sum

    @property
    def exact(self) -> bool:
        return self.method.exact

    @property
    def contracts_new_traces(self) -> bool:
        """Whether the online step contracts the **new** traces with the credit on the new carry (on a cell with
        ``output``; ``rtrl.online``) rather than the previous ones with the credit on the previous carry, the last
        step then taken exactly. The two agree for an exact rule, and the new ones are cheaper; an approximation
        takes the previous ones unless its definition is the contraction of its new traces (Bellec et al.'s
        e-prop: ``sum_t L^t e^t``, ``new_traces=True``)."""
        return self.exact if self.new_traces is None else self.new_traces

    @property
    def trace_dtype(self) -> str | None:
        return self.method.trace_dtype


def checked_bind(bind: Callable) -> Callable:
    """``bind`` whose ``cell`` must be a cell object (not a name, a class or ``None``) and whose ``params`` and
    ``carry``, where given, must have the cell's tree and shapes (another cell's are refused, naming the argument)."""

    @functools.wraps(bind)
    def bind_checked(self, cell, params=None, carry=None) -> TraceRule:
        check_cell(cell)
        if params is not None:
            same_tree("params", describe(params), expected_params(cell), cell.name)
        if carry is not None:
            same_tree("carry", describe(carry), describe(jax.eval_shape(lambda: cell.initial_carry(()))), cell.name)
        return bind(self, cell, params, carry)

    return bind_checked


class Method(Frozen):
    name: ClassVar[str] = "method"
    online: ClassVar[bool] = False
    exact: ClassVar[bool] = False

    def check(self, cell) -> None:
        """Raise ``ValueError`` when this method does not apply to ``cell``."""

    def __init_subclass__(cls, **kwargs) -> None:
        """Every method's ``bind`` checks its arguments first, in one place (``checked_bind``)."""
        super().__init_subclass__(**kwargs)
        if "bind" in cls.__dict__:
            cls.bind = checked_bind(cls.__dict__["bind"])


class TraceMethod(Method):
    online: ClassVar[bool] = True
    trace_dtype: str | None = trace_dtype_option()

    def two_steps_where_leaves_cross(self, cell) -> bool:
        """Whether a scan of this method's steps on ``cell`` compiles two per loop body where a leaf of the cell's
        new carry reads the old value of another (``rtrl.online.steps_per_body``): measured per method, as the gain
        depends on how its traces are laid out (none by default)."""
        return False

    def __check_init__(self) -> None:
        object.__setattr__(self, "trace_dtype", check_trace_dtype(self.trace_dtype))  # canonical: "bfloat16"

    def bind(self, cell, params=None, carry=None) -> TraceRule:
        """The rule of this method for ``cell`` (``ValueError`` where it does not apply). ``params`` and ``carry``
        (one example's, arrays or shapes) default to the shapes of ``cell.init`` and ``cell.initial_carry``."""
        raise NotImplementedError

    def trace_shapes(self, cell) -> Any:
        """The shapes and dtypes of one example's traces under this method (what the rule's ``init`` makes, in the
        default dtype), or ``None`` where finding them out would cost a probe of the cell's Jacobians."""
        params, carry = example_shapes(cell)
        return jax.eval_shape(bound(self, cell).init, params, carry)

    def over_windows(self, cell) -> SequenceMethod | None:
        """A sequence method that computes this method's gradient over a window whose traces start at zero, on
        ``cell``, without per-step traces (a trainer whose every window starts an episode may take it instead), or
        ``None`` where there is none (the default)."""
        return None


@functools.lru_cache(maxsize=64)
def _bound(method: TraceMethod, cell, dtype) -> TraceRule:
    return method.bind(cell)


def bound(method: TraceMethod, cell) -> TraceRule:
    """``method.bind(cell)`` on the cell's own shapes, found once per method, cell and default dtype (methods and
    cells are compared by value): a run's memory estimate and its learner share one discovery. A method or cell
    that cannot be hashed (a UORO seed that is a traced array) is bound afresh."""
    try:
        hash((method, cell))
    except TypeError:
        return method.bind(cell)
    return _bound(method, cell, default_dtype())


bound.cache_clear = _bound.cache_clear  # forget every binding (a test that counts discoveries starts afresh)


class SequenceMethod(Method):
    def bind(self, cell, params=None, carry=None):
        """A sequence method has no online rule: ``TypeError`` saying what to use instead."""
        raise TypeError(f"{self.name} is a sequence method: it needs the whole sequence and has no online rule to "
                        f"bind; use rtrl.sequence_grad(cell, params, xs, targets, loss_fn, method={self.name!r}), or "
                        "an online method such as rtrl.methods.DenseRTRL()")

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        """``(loss, grads)`` of ``sum_t loss_fn(h_t, targets[t])`` over ``xs`` from ``carry``."""
        raise NotImplementedError
