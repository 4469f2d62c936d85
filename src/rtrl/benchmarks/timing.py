"""Median wall time of a jitted function, and the per-step costs the benchmarks compare."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax import lax

import rtrl
from rtrl.compare import squared_error


def interleaved_seconds(calls: dict[str, tuple[Callable, tuple]], repeats: int = 7,
                        min_seconds: float = 0.05, clock: Callable[[], float] = time.perf_counter
                        ) -> dict[str, float]:
    """Median over ``repeats`` of the time per call of each ``fn(*args)`` in ``calls = {name: (fn, args)}``
    (compiled first, results awaited), taken round-robin: every repeat times every function once, so a slow
    spell of a shared machine slows them all alike and the ratios between them hold. Each timing calls its
    function enough times to last ``min_seconds``, so short calls are not timer noise. ``clock``: wall time by
    default; ``time.process_time`` counts the CPU time of this process's threads, which other processes on a busy
    machine disturb far less (``CPU_TIME``)."""
    counts = {}
    for name, (fn, args) in calls.items():
        jax.block_until_ready(fn(*args))
        start = clock()
        jax.block_until_ready(fn(*args))
        counts[name] = max(1, int(min_seconds / max(clock() - start, 1e-9)))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, (fn, args) in calls.items():
            start = clock()
            for _ in range(counts[name]):
                out = fn(*args)
            jax.block_until_ready(out)
            samples[name].append((clock() - start) / counts[name])
    return {name: statistics.median(times) for name, times in samples.items()}


# How to time on a machine that other work keeps busy: one XLA thread (XLA_FLAGS below, set before JAX starts) and
# the process's CPU time, so that a ratio compares the work of two programs, not their share of the cores.
CPU_TIME = {"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}


def median_seconds(fn: Callable, *args, repeats: int = 7, min_seconds: float = 0.05) -> float:
    """Median time per call of ``fn(*args)`` (see ``interleaved_seconds``)."""
    return interleaved_seconds({"fn": (fn, args)}, repeats, min_seconds)["fn"]


def random_problem(cell, T: int, B: int, seed: int = 0):
    """``(params, xs, ys)`` in float32 for ``T`` steps of ``B`` streams: the problem every benchmark times."""
    k_p, k_x, k_y = jax.random.split(jax.random.PRNGKey(seed), 3)
    params = cell.init(k_p, jnp.float32)
    xs = jax.random.normal(k_x, (T, B, cell.input_size), jnp.float32)
    ys = jax.random.normal(k_y, (T, B, cell.hidden_size), jnp.float32)
    return params, xs, ys


def forward_fn(cell) -> Callable:
    """The forward pass alone, the baseline of every ratio: ``(params, xs, ys) -> (carry, loss)`` scans the cell
    over ``xs`` with the same per-step loss as the gradients, without any gradient. (The loss keeps ``h`` alive:
    a baseline that returned only the carry would let XLA drop every part of ``h`` outside the recurrence, such
    as the eLSTM's output gate.)"""

    @jax.jit
    def run(params, xs, ys):
        def body(carry_loss, xy):
            carry, h = cell.step(params, carry_loss[0], xy[0])
            return (carry, carry_loss[1] + squared_error(h, xy[1])), None

        carry = cell.initial_carry(xs.shape[1:-1], xs.dtype)
        return lax.scan(body, (carry, jnp.zeros((), xs.dtype)), (xs, ys))[0]

    return run


def gradient_fn(cell, method) -> Callable:
    """``(params, xs, ys) -> (loss, grads)``: jitted ``sequence_grad`` under ``method``, a loss on every step."""
    return jax.jit(lambda p, xs, ys: rtrl.sequence_grad(cell, p, xs, ys, squared_error, method=method))


def per_step_seconds(cell, params, xs, ys, methods, steps: dict[str, int] | None = None,
                     clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Seconds per step of the forward pass (``"forward"``) and of each method's whole-sequence gradient (forward,
    traces and gradient; or BPTT over all of ``xs``), measured round-robin on ``clock`` (``interleaved_seconds``);
    ``steps[method]`` runs a method on the first steps only (for the slow dense RTRL)."""
    steps = steps or {}
    lengths = {"forward": xs.shape[0], **{m: steps.get(m, xs.shape[0]) for m in methods}}
    calls = {"forward": (forward_fn(cell), (params, xs, ys))}
    calls.update({m: (gradient_fn(cell, m), (params, xs[:lengths[m]], ys[:lengths[m]])) for m in methods})
    return {name: seconds / lengths[name] for name, seconds in interleaved_seconds(calls, clock=clock).items()}
