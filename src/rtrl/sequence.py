"""``sequence_grad``: the loss summed over a sequence and its gradient under any method."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from rtrl import validate
from rtrl.methods import Method, resolve
from rtrl.online import online, stream_grad


def check_sequence(cell, xs, targets) -> None:
    if jnp.ndim(xs) < 2:
        raise ValueError(f"xs must have shape (T, *batch, input_size), got shape {jnp.shape(xs)}")
    if jnp.shape(xs)[-1] != cell.input_size:
        raise ValueError(
            f"xs must end in input_size={cell.input_size} for {cell.name}, got shape {jnp.shape(xs)}"
        )
    T = jnp.shape(xs)[0]
    if T == 0:
        raise ValueError("xs must hold at least one time step (T >= 1), got T = 0")
    for leaf in jax.tree.leaves(targets):
        if jnp.ndim(leaf) < 1 or jnp.shape(leaf)[0] != T:
            raise ValueError(f"targets must have leading dimension T = {T} like xs, got shape {jnp.shape(leaf)}")


def sequence_grad(cell, params, xs, targets, loss_fn, method: str | Method = "rtrl", carry=None):
    """``(loss, grads)``: ``loss = sum_t loss_fn(h_t, targets[t])`` over ``xs`` (T, *batch, input_size), from
    ``carry`` (default: ``cell.initial_carry(batch)``), and its gradient w.r.t. ``params`` under ``method``."""
    method = resolve(method, cell)
    check_sequence(cell, xs, targets)
    xs = validate.sequence(cell, params, xs, targets, loss_fn, carry)
    if carry is None:
        carry = cell.initial_carry(jnp.shape(xs)[1:-1], jnp.result_type(xs, *jax.tree.leaves(params)))
    return _compiled(cell, params, xs, targets, loss_fn, method, carry)


@partial(jax.jit, static_argnames=("cell", "loss_fn", "method"))
def _compiled(cell, params, xs, targets, loss_fn, method, carry):
    """Compiled once per cell, loss, method and shapes: repeated calls (tests, benchmarks) skip tracing."""
    if not method.online:
        return method.sequence_grad(cell, params, xs, targets, loss_fn, carry)
    learner = online(cell, method)
    loss, grads, _ = stream_grad(learner, params, learner.init(params, carry=carry), xs, targets, loss_fn)
    return loss, grads
