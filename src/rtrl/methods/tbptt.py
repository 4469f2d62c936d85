"""Truncated back-propagation through time, chunked: ``TBPTT(truncation=k)``.

The sequence is cut into consecutive chunks of ``k`` steps (the last one shorter when ``k`` does not divide
``T``). Each chunk starts from the carry the previous chunk ended in, taken as a constant, and its losses are
back-propagated within the chunk only. So the loss at step ``t`` of a chunk sees gradients through the
``1 .. k`` steps back to the chunk's start (on average about ``k / 2``), not a sliding window of ``k``. This
is the usual TBPTT(k, k): one backward pass per ``k`` steps, memory ``O(k)`` steps of activations. With
``k >= T`` there is one chunk and the gradient is BPTT's.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
from jax import lax

from rtrl.checks import check_positive_int
from rtrl.methods.base import SequenceMethod
from rtrl.methods.bptt import scan_loss


class TBPTT(SequenceMethod):
    """Chunked truncated BPTT with chunks of ``truncation`` steps (default 8)."""

    truncation: int = 8
    name: ClassVar[str] = "tbptt"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive_int("truncation", self.truncation)

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        T = jnp.shape(xs)[0]
        k = min(self.truncation, T)
        chunks, tail = divmod(T, k)

        def chunk(acc, xy):
            carry, loss, grads = acc
            (l, carry), g = jax.value_and_grad(
                lambda p: scan_loss(cell, p, xy[0], xy[1], loss_fn, carry), has_aux=True
            )(params)
            return (carry, loss + l, jax.tree.map(jnp.add, grads, g)), None

        head = jax.tree.map(lambda a: a[: chunks * k].reshape((chunks, k) + a.shape[1:]), (xs, targets))
        zero = jnp.zeros((), jnp.result_type(*jax.tree.leaves(params)))
        acc, _ = lax.scan(chunk, (carry, zero, jax.tree.map(jnp.zeros_like, params)), head)
        if tail:
            acc, _ = chunk(acc, jax.tree.map(lambda a: a[chunks * k:], (xs, targets)))
        _, loss, grads = acc
        return loss, grads
