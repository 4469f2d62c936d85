"""``sequence_grad``: the loss summed over a sequence and its gradient under any method.

Under ``"auto"`` a whole sequence may have more than one exact path (``Auto.sequence_candidates``: the online
choice, and ``chunked`` for a declared element-wise recurrence). Called with arrays, ``sequence_grad`` times each
candidate on the call's own shapes (compiled first, then the least of ``TIMED_CALLS`` calls) and keeps the faster
for every later call of that cell, loss, shapes, dtypes and device (``chosen`` says which); called while being
traced (inside a user's ``jax.jit``) it cannot time, and takes the online choice."""

from __future__ import annotations

import time
from functools import partial

import jax

from rtrl import validate
from rtrl.methods import Auto, Method, resolve
from rtrl.online import online, stream_grad

TIMED_CALLS = 3
CHOICES_KEPT = 256  # the measured choices kept, oldest dropped first: a long-running process meets few shapes
_choices: dict[tuple, Method] = {}


def sequence_grad(cell, params, xs, targets, loss_fn, method: str | Method = "rtrl", carry=None):
    """``(loss, grads)``: ``loss = sum_t loss_fn(h_t, targets[t])`` over ``xs`` (T, *batch, input_size), from
    ``carry`` (default: ``cell.initial_carry(batch)``), and its gradient w.r.t. ``params`` under ``method``.

    Computed in the promoted dtype of ``params``, ``xs`` and ``carry`` (as BPTT's type promotion does, for every
    method alike); each gradient is in its parameter's dtype."""
    validate.check_cell(cell)
    auto = Auto() if method == "auto" else method
    method = resolve(method, cell)
    xs, carry = validate.sequence(cell, params, xs, targets, loss_fn, carry)
    if isinstance(auto, Auto) and not _traced(params, xs, targets, carry):
        method = fastest(cell, auto.sequence_candidates(cell), params, xs, targets, loss_fn, carry)
    return _compiled(cell, params, xs, targets, loss_fn, method, carry)


def _traced(*trees) -> bool:
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(trees))


def _choice_key(cell, loss_fn, candidates, *arrays) -> tuple:
    """What a measured choice holds for: the cell, loss, candidates and backend, and the arrays' structures, shapes
    and dtypes (``arrays``: params, xs, targets, carry)."""
    signature = tuple((jax.tree.structure(t), tuple((jax.numpy.shape(a), jax.numpy.result_type(a))
                                                    for a in jax.tree.leaves(t))) for t in arrays)
    return cell, loss_fn, tuple(candidates), jax.default_backend(), signature


def call_seconds(fn) -> float:
    """The least of ``TIMED_CALLS`` timed calls of ``fn`` (awaited), after one untimed call that compiles it."""
    jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(TIMED_CALLS):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best


def fastest(cell, candidates, params, xs, targets, loss_fn, carry, seconds=call_seconds) -> Method:
    """The candidate whose whole-sequence gradient ``seconds`` finds fastest on these arguments, measured once per
    cell, loss, candidates, shapes, dtypes and backend (``chosen(...)`` reads the choice back)."""
    if len(candidates) == 1:
        return candidates[0]
    key = _choice_key(cell, loss_fn, candidates, params, xs, targets, carry)
    if key not in _choices:
        timed = {m: seconds(partial(_compiled, cell, params, xs, targets, loss_fn, m, carry)) for m in candidates}
        if len(_choices) >= CHOICES_KEPT:
            del _choices[next(iter(_choices))]
        _choices[key] = min(candidates, key=timed.__getitem__)
    return _choices[key]


def chosen(cell, params, xs, targets, loss_fn, carry=None) -> Method | None:
    """What ``sequence_grad(..., method="auto")`` measured and runs for these arguments, or ``None`` before its
    first call with them (or where there was nothing to choose between)."""
    xs, carry = validate.sequence(cell, params, xs, targets, loss_fn, carry)
    return _choices.get(_choice_key(cell, loss_fn, Auto().sequence_candidates(cell), params, xs, targets, carry))


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
