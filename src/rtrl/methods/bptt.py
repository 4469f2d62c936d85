"""Back-propagation through time: ``jax.grad`` through ``lax.scan``, the oracle every exact method must match."""

from __future__ import annotations

from typing import ClassVar

import jax
from jax import lax

from rtrl.methods.base import SequenceMethod


def scan_loss(cell, params, xs, targets, loss_fn, carry):
    """Sum over steps of ``loss_fn(h_t, target_t)``, and the final carry."""

    def body(c, xy):
        c, h = cell.step(params, c, xy[0])
        return c, loss_fn(h, xy[1])

    carry, losses = lax.scan(body, carry, (xs, targets))
    return losses.sum(), carry


class BPTT(SequenceMethod):
    """Back-propagation through time: ``jax.grad`` through ``lax.scan``, the oracle."""

    name: ClassVar[str] = "bptt"
    exact: ClassVar[bool] = True

    def sequence_grad(self, cell, params, xs, targets, loss_fn, carry):
        def total(p):
            return scan_loss(cell, p, xs, targets, loss_fn, carry)[0]

        return jax.value_and_grad(total)(params)
