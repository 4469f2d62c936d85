"""Median wall time of a jitted function, and the per-step costs the benchmarks compare."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

import rtrl


def median_seconds(fn: Callable, *args, repeats: int = 7, min_seconds: float = 0.05) -> float:
    """Median over ``repeats`` of the time per call of ``fn(*args)`` (compiled first, results awaited).

    Each repeat calls ``fn`` enough times to last ``min_seconds``, so short calls are not timer noise."""
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    calls = max(1, int(min_seconds / max(time.perf_counter() - start, 1e-9)))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def squared_error(h, y):
    return jnp.sum((h - y) ** 2)


def forward_per_step(cell, params, xs, ys) -> float:
    """Seconds per step of the forward pass alone, the baseline of every ratio: the cell scanned over ``xs`` and
    the same per-step loss as the gradients, without any gradient. (The loss keeps ``h`` alive: a baseline that
    returned only the carry would let XLA drop every part of ``h`` outside the recurrence, such as the eLSTM's
    output gate.)"""

    @jax.jit
    def run(params, xs, ys):
        def body(carry_loss, xy):
            carry, h = cell.step(params, carry_loss[0], xy[0])
            return (carry, carry_loss[1] + squared_error(h, xy[1])), None

        carry = cell.initial_carry(xs.shape[1:-1], xs.dtype)
        return lax.scan(body, (carry, jnp.zeros((), xs.dtype)), (xs, ys))[0]

    return median_seconds(run, params, xs, ys) / xs.shape[0]


def method_per_step(cell, params, xs, ys, method) -> float:
    """Seconds per step of ``sequence_grad`` under ``method`` (forward, traces and gradient; or BPTT over the
    whole of ``xs``), with a loss on every step."""
    run = jax.jit(lambda p, xs, ys: rtrl.sequence_grad(cell, p, xs, ys, squared_error, method=method))
    return median_seconds(run, params, xs, ys) / xs.shape[0]

