"""``sequence_grad``: the loss summed over a sequence and its gradient under any method."""

from __future__ import annotations

from functools import partial

import jax

from rtrl import validate
from rtrl.methods import Method, resolve
from rtrl.online import online, stream_grad


def sequence_grad(cell, params, xs, targets, loss_fn, method: str | Method = "rtrl", carry=None):
    """``(loss, grads)``: ``loss = sum_t loss_fn(h_t, targets[t])`` over ``xs`` (T, *batch, input_size), from
    ``carry`` (default: ``cell.initial_carry(batch)``), and its gradient w.r.t. ``params`` under ``method``.

    Computed in the promoted dtype of ``params``, ``xs`` and ``carry`` (as BPTT's type promotion does, for every
    method alike); each gradient is in its parameter's dtype."""
    validate.check_cell(cell)
    method = resolve(method, cell)
    xs, carry = validate.sequence(cell, params, xs, targets, loss_fn, carry)
    return _compiled(cell, params, xs, targets, loss_fn, method, carry)


@partial(jax.jit, static_argnames=("cell", "loss_fn", "method"))
def _compiled(cell, params, xs, targets, loss_fn, method, carry):
    """Compiled once per cell, loss, method and shapes: repeated calls (tests, benchmarks) skip tracing."""
    wide = validate.cast(params, xs.dtype)  # differentiable: the gradients come back in the parameters' dtypes
    if not method.online:
        loss, grads = method.sequence_grad(cell, wide, xs, targets, loss_fn, carry)
    else:
        learner = online(cell, method)
        loss, grads, _ = stream_grad(learner, wide, learner.init(wide, carry=carry), xs, targets, loss_fn)
    return loss, validate.like(grads, params)
