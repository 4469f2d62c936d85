"""The online step: one call per time step, whose ordinary ``jax.grad`` is the method's gradient.

``learner.step(params, state, x)`` returns ``h`` and the next state. It is a ``custom_vjp``: its forward pass
advances the carry and the traces; its backward pass, given ``dL/dh``, back-propagates through this one step
only (to the parameters, the input and the previous carry) and turns the credit on the previous carry into a
parameter gradient with the previous traces::

    dL_t/dtheta = dL_t/dh_t * [ dh_t/dtheta |immediate + dh_t/dcarry_{t-1} * M_{t-1} ]

so any readout or loss built on ``h`` composes with ``jax.grad`` and optax, nothing is counted twice within a
step (the path carry -> h is taken once, through the step), and the state carries no gradient (its cotangent is
ignored). Summed over a sequence, an exact method's per-step gradients equal BPTT's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.methods import TraceMethod, resolve


class OnlineState(NamedTuple):
    carry: Any
    traces: Any


class Learner(NamedTuple):
    """``init(params, batch_shape=(), carry=None)``, ``step(params, state, x)``, ``reset(state, done)``."""

    cell: Any
    method: TraceMethod
    init: Callable
    step: Callable
    reset: Callable


def over_batch(fn: Callable, batch_ndim: int, in_axes) -> Callable:
    """``fn`` of one example mapped over ``batch_ndim`` leading batch dimensions."""
    for _ in range(batch_ndim):
        fn = jax.vmap(fn, in_axes=in_axes)
    return fn


def sum_batch(tree, batch_ndim: int):
    return jax.tree.map(lambda a: a.sum(axis=tuple(range(batch_ndim))), tree)


def contract_summed(contract: Callable, traces, g_carry, batch_ndim: int):
    """``sum over examples of contract(traces_i, g_i)``.

    On a CPU the examples are accumulated one after another: XLA turns the vmapped product followed by a sum over
    the leading batch axis into a strided reduction several times slower than streaming each example's traces
    once (ELSTM 64x256x32: 0.75 ms against about 0.2 ms a step). Elsewhere the vmapped form keeps the parallelism.
    """
    if batch_ndim == 0:
        return contract(traces, g_carry)
    examples = math.prod(jax.tree.leaves(g_carry)[0].shape[:batch_ndim])
    if jax.default_backend() != "cpu" or examples == 0:
        return sum_batch(over_batch(contract, batch_ndim, 0)(traces, g_carry), batch_ndim)
    flat = jax.tree.map(lambda a: a.reshape((examples,) + a.shape[batch_ndim:]), (traces, g_carry))

    def example(i):
        return contract(*jax.tree.map(lambda a: a[i], flat))

    def body(i, total):
        return jax.tree.map(jnp.add, total, example(i))

    return lax.fori_loop(1, examples, body, example(0))


def zero_where(done: jax.Array, tree):
    """Zero every leaf's example where ``done`` (shape ``batch``) is true."""

    def leaf(a):
        mask = done.reshape(done.shape + (1,) * (a.ndim - done.ndim))
        return jnp.where(mask, jnp.zeros((), a.dtype), a)

    return jax.tree.map(leaf, tree)


def online(cell, method: str | TraceMethod = "rtrl") -> Learner:
    """The online learner of ``cell`` under a trace method (a name from ``rtrl.METHODS`` or an object)."""
    method = resolve(method, cell)
    if not method.online:
        raise ValueError(
            f"method {method.name!r} needs the whole sequence and has no online step; "
            "use rtrl.sequence_grad, or a trace method such as 'rtrl'"
        )

    def init(params, batch_shape: tuple[int, ...] = (), carry=None) -> OnlineState:
        if carry is None:
            dtype = jnp.result_type(*jax.tree.leaves(params))
            carry = cell.initial_carry(tuple(batch_shape), dtype)
        batch_ndim = jax.tree.leaves(carry)[0].ndim - 1
        traces = over_batch(lambda c: method.init(cell, params, c), batch_ndim, 0)(carry)
        return OnlineState(carry, traces)

    def forward(params, state, x):
        cell.check_input(x)
        batch_ndim = jnp.ndim(x) - 1
        (carry, h), step_vjp = jax.vjp(cell.step, params, state.carry, x)
        update = over_batch(lambda c, tr, xi: method.update(cell, params, c, tr, xi), batch_ndim, 0)
        traces = update(state.carry, state.traces, x)
        return (h, OnlineState(carry, traces)), (params, state, step_vjp)

    @jax.custom_vjp
    def step(params, state, x):
        return forward(params, state, x)[0]

    def backward(residuals, cotangents):
        params, state, step_vjp = residuals
        g_h, _ = cotangents  # the next state carries no gradient
        batch_ndim = jnp.ndim(g_h) - 1
        zero_carry = jax.tree.map(jnp.zeros_like, state.carry)
        g_params, g_carry, g_x = step_vjp((zero_carry, g_h))
        g_traced = contract_summed(lambda tr, g: method.contract(cell, params, tr, g), state.traces, g_carry,
                                   batch_ndim)
        g_params = jax.tree.map(jnp.add, g_params, g_traced)
        return g_params, jax.tree.map(jnp.zeros_like, state), g_x

    step.defvjp(forward, backward)

    def reset(state: OnlineState, done: jax.Array) -> OnlineState:
        done = jnp.asarray(done)
        batch_shape = jax.tree.leaves(state.carry)[0].shape[:-1]
        if done.shape != batch_shape or done.dtype != jnp.bool_:
            raise ValueError(f"done must be a bool array of the batch shape {batch_shape}, got "
                             f"{done.dtype} {done.shape}")
        return OnlineState(zero_where(done, state.carry), zero_where(done, state.traces))

    return Learner(cell, method, init, step, reset)


def stream_grad(learner: Learner, params, state: OnlineState, xs, targets, loss_fn):
    """Sum of losses and of per-step gradients over ``xs`` (T, ...), in constant memory; and the last state."""

    def body(acc, xy):
        state, loss, grads = acc

        def step_loss(p):
            h, next_state = learner.step(p, state, xy[0])
            return loss_fn(h, xy[1]), next_state

        (l, state), g = jax.value_and_grad(step_loss, has_aux=True)(params)
        return (state, loss + l, jax.tree.map(jnp.add, grads, g)), None

    zero = jnp.zeros((), jnp.result_type(*jax.tree.leaves(params)))
    (state, loss, grads), _ = lax.scan(body, (state, zero, jax.tree.map(jnp.zeros_like, params)), (xs, targets))
    return loss, grads, state
