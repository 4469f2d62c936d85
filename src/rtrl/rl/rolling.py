"""Rolling truncated BPTT as an online learner: at every step, back-propagate through the last ``K`` steps.

``RollingTBPTT(truncation=K).bind(cell)`` (or ``rolling_tbptt(cell, K)``) is a learner with the interface of
``rtrl.online`` (``init``, ``step``, ``reset``, ``cell``, ``method``), so an agent swaps it for a trace method.

Why it binds to a learner and not to a ``rtrl.methods.TraceRule`` as the trace methods do: a trace rule keeps, per
example, a summary of the past (the traces) that a credit on the carry is contracted with, so the past itself is
dropped and ``rtrl.online`` can run every rule through one step whose backward pass never looks back. Rolling
TBPTT keeps the past (the last ``K`` inputs) and differentiates through it with ordinary autodiff: there is no
summary to contract, and the gradient of a step is the backward pass of a ``K``-step unroll. So it is another kind
of thing, an option object that binds to a cell like a method (``bind``; frozen, compared by value, checked in
``__check_init__``) whose binding is the learner itself.

Its state keeps the last ``K`` inputs, where an episode began among them, and the carry before the oldest (a
constant: nothing flows back past it). ``step`` appends ``x`` and unrolls the cell
over the window from that carry with ordinary autodiff, so ``jax.grad`` of a loss on ``h_t`` is::

    d L_t / d theta  through  carry_{t-K} (fixed) -> x_{t-K+1} -> ... -> x_t

This is the sliding window of TBPTT(K) (each step sees exactly K steps back), not the chunked ``rtrl.methods.TBPTT``
(which sees 1 .. K); a step costs K forward and K backward steps. Where the episode began inside the window, the
carry is zeroed before that step, as ``learner.reset`` does, so with ``K`` at least the episode's length every
gradient is BPTT's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.checks import check_positive_int
from rtrl.frozen import Frozen
from rtrl.online import Learner, zero_where


class Window(NamedTuple):
    start: Any  # the carry before the oldest input of the window
    xs: jax.Array  # (K, *batch, input_size): the last K inputs, oldest first
    fresh: jax.Array  # (K, *batch) bool: an episode begins at that input (the carry is zeroed before it)
    filled: jax.Array  # (K,) bool: the slot holds an input (the first K - 1 steps leave slots empty)
    pending: jax.Array  # (*batch,) bool: the next input begins an episode


class RollingTBPTT(Frozen):
    """Rolling truncated BPTT over the last ``truncation`` steps (see the module docstring); named as the chunked
    ``tbptt`` it stands in for online, and not exact."""

    truncation: int = 8
    name: ClassVar[str] = "tbptt"
    online: ClassVar[bool] = True
    exact: ClassVar[bool] = False

    def __check_init__(self) -> None:
        check_positive_int("truncation", self.truncation)

    def bind(self, cell) -> Learner:
        """The learner of ``cell`` under this window."""
        return Learner(cell, self, *window_learner(cell, self.truncation))


def rolling_tbptt(cell, truncation: int) -> Learner:
    """``RollingTBPTT(truncation).bind(cell)``."""
    return RollingTBPTT(truncation).bind(cell)


def window_learner(cell, K: int) -> tuple[Callable, Callable, Callable]:
    """``(init, step, reset)`` of the rolling window of ``K`` steps over ``cell``."""

    def init(params, batch_shape: tuple[int, ...] = (), carry=None) -> Window:
        dtype = jnp.result_type(*jax.tree.leaves(params))
        batch_shape = tuple(batch_shape)
        if carry is None:
            carry = cell.initial_carry(batch_shape, dtype)
        else:
            batch_shape = jax.tree.leaves(carry)[0].shape[:-1]
        return Window(carry, jnp.zeros((K, *batch_shape, cell.input_size), dtype), jnp.zeros((K, *batch_shape), bool),
                      jnp.zeros((K,), bool), jnp.zeros(batch_shape, bool))

    def unroll(params, start, xs, fresh, filled):
        def body(carry, slot):
            x, f, filled = slot
            new, h = cell.step(params, zero_where(f, carry), x)
            carry = jax.tree.map(lambda a, b: jnp.where(filled, a, b), new, carry)  # an empty slot passes it on
            return carry, (carry, h)

        _, (carries, hs) = lax.scan(body, start, (xs, fresh, filled))
        return carries, hs

    def step(params, window: Window, x) -> tuple[jax.Array, Window]:
        cell.check_input(x)
        xs = jnp.concatenate([window.xs[1:], jnp.asarray(x, window.xs.dtype)[None]])
        fresh = jnp.concatenate([window.fresh[1:], window.pending[None]])
        filled = jnp.concatenate([window.filled[1:], jnp.ones((1,), bool)])
        carries, hs = unroll(params, window.start, xs, fresh, filled)
        # The carry after the oldest slot starts the next window; nothing flows back past it.
        start = lax.stop_gradient(jax.tree.map(lambda a: a[0], carries))
        return hs[-1], Window(start, lax.stop_gradient(xs), fresh, filled, jnp.zeros_like(window.pending))

    def reset(window: Window, done: jax.Array) -> Window:
        done = jnp.asarray(done)
        if done.shape != window.pending.shape or done.dtype != jnp.bool_:
            raise ValueError(f"done must be a bool array of the batch shape {window.pending.shape}, got "
                             f"{done.dtype} {done.shape}")
        return window._replace(pending=window.pending | done)

    return init, step, reset
